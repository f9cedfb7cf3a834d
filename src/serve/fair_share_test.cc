#include "serve/fair_share.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace colo {
namespace {

// Issue 53 (7): a job alone is charged the whole GPU whatever it reports; a
// shared GPU is split by what colo measured, else by the jobs' reports, else
// equally; no report takes a job below half of an equal split.
TEST(FairShare, AJobIsChargedTheShareOfItsGpuColoMeasured) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::string what;
    std::vector<JobOnGpu> jobs;
    std::vector<double> shares;
  };
  const std::vector<Case> cases = {
      {"alone, reporting a tiny rate", {{{}, {}, 0.01}}, {1.0}},
      {"alone, measured idle", {{0.0, {}, {}}}, {1.0}},
      {"two, nothing known: equal", {{}, {}}, {0.5, 0.5}},
      {"two, measured 60/20", {{60.0, {}, 0.1}, {20.0, {}, 0.9}}, {0.75, 0.25}},
      {"two, one unmeasured: by reports", {{60.0, {}, 0.6}, {{}, {}, 0.2}}, {0.75, 0.25}},
      {"two, measured, a report claims nothing", {{50.0, {}, 0.0}, {50.0, {}, 1.0}}, {0.5, 0.5}},
      {"two, unmeasured, MPS shares 30/10", {{{}, 30.0, 0.1}, {{}, 10.0, 0.9}}, {0.75, 0.25}},
      {"two, one reports a tiny rate: at least half of equal",
       {{{}, {}, 0.001}, {{}, {}, 1.0}},
       {0.25, 1.0 / 1.001}},
      {"four, a NaN report: equal",
       {{{}, {}, nan}, {{}, {}, 1.0}, {{}, {}, 1.0}, {{}, {}, 1.0}},
       {0.25, 0.25, 0.25, 0.25}},
      {"three, measured 90/5/5: floors at half of a third",
       {{90.0, {}, {}}, {5.0, {}, {}}, {5.0, {}, {}}},
       {0.9, 1.0 / 6, 1.0 / 6}},
  };
  for (const Case& c : cases) {
    const std::vector<double> got = charged_shares(c.jobs);
    ASSERT_EQ(got.size(), c.shares.size()) << c.what;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], c.shares[i], 1e-9) << c.what;
  }
  EXPECT_TRUE(charged_shares({}).empty());
}

}  // namespace
}  // namespace colo
