#include "run/objective_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace colo {
namespace {

using ::testing::HasSubstr;

ProgressEvent event(const std::string& kind, std::map<std::string, double> metrics,
                    std::optional<int64_t> epoch = {}) {
  ProgressEvent e;
  e.kind = kind;
  e.epoch = epoch;
  e.metrics = std::move(metrics);
  return e;
}

// One report as the watch sees it, with the job's epochs ended by then.
struct Seen {
  ProgressEvent event;
  int64_t epochs_ended = 0;
};

TEST(ObjectiveWatch, NamesWhatTheJobReportsInOrder) {
  ObjectiveWatch watch("val_acc", "w[lr=0.1]");
  EXPECT_FALSE(watch.saw(event("epoch_end", {{"loss", 1}, {"epoch_time_s", 3}}, 1), 1));
  EXPECT_FALSE(watch.saw(event("metric", {{"val_loss", 1}}, 1), 1));
  EXPECT_EQ(watch.saw(event("step", {}), 1),
            "objective 'val_acc' not reported by w[lr=0.1]: it reports loss, val_loss; early "
            "stopping cannot judge it, nor colo show rank by it");
  ObjectiveWatch reported("loss", "w");
  EXPECT_FALSE(reported.saw(event("epoch_end", {{"loss", 1}}, 1), 1));
  EXPECT_FALSE(reported.saw(event("epoch_end", {{"acc", 1}}, 2), 2));
  EXPECT_FALSE(reported.ended());
}

TEST(ObjectiveWatch, WarnsOnceWhenTheJobWentPastItsFirstEpochWithoutTheObjective) {
  struct Case {
    const char* name;
    std::vector<Seen> reports;
    int warned_at;  // the report after which it warns; -1: only at the job's end; -2: never
  };
  const std::vector<Case> cases = {
      {"a step of epoch 2",
       {{event("step", {{"loss", 1}}), 0},
        {event("epoch_end", {{"loss", 1}}, 1), 1},
        {event("metric", {{"val_loss", 1}}, 1), 1},
        {event("step", {{"loss", 1}}), 1},
        {event("step", {{"loss", 1}}), 1}},
       3},
      {"the second epoch's end, for a job that reports only epochs",
       {{event("epoch_end", {{"loss", 1}}, 1), 1}, {event("epoch_end", {{"loss", 1}}, 2), 2}},
       1},
      {"validated after its first epoch ended: not warned",
       {{event("epoch_end", {{"loss", 1}}, 1), 1},
        {event("metric", {{"val_acc", 0.5}}, 1), 1},
        {event("step", {{"loss", 1}}), 1}},
       -2},
      {"its first epoch only: at its end",
       {{event("step", {{"loss", 1}}), 0}, {event("epoch_end", {{"loss", 1}}, 1), 1}},
       -1},
      {"no training metric at all: nothing to say",
       {{event("epoch_end", {{"samples_per_s", 100}}, 1), 1},
        {event("epoch_end", {{"img_per_s", 100}}, 2), 2}},
       -2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ObjectiveWatch watch("val_acc", "w[lr=0.1]");
    std::vector<int> warned;
    for (size_t i = 0; i < c.reports.size(); ++i) {
      if (std::optional<std::string> w = watch.saw(c.reports[i].event, c.reports[i].epochs_ended)) {
        warned.push_back(static_cast<int>(i));
        EXPECT_THAT(*w, HasSubstr("objective 'val_acc' not reported by w[lr=0.1]: it reports "
                                  "loss"));
      }
    }
    std::optional<std::string> at_end = watch.ended();
    if (c.warned_at >= 0) {
      EXPECT_EQ(warned, std::vector<int>{c.warned_at});
      EXPECT_FALSE(at_end) << "once";
    } else {
      EXPECT_TRUE(warned.empty());
      EXPECT_EQ(at_end.has_value(), c.warned_at == -1);
      if (at_end) EXPECT_THAT(*at_end, HasSubstr("it reports loss;"));
    }
  }
}

}  // namespace
}  // namespace colo
