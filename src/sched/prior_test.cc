#include "sched/prior.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/units.h"

namespace colo {
namespace {

using testing::HasSubstr;

PriorSample sample(const std::string& name, std::vector<std::string> command, double memory_gib,
                   double sm_pct) {
  JobProfile p;
  p.peak_memory_bytes = static_cast<uint64_t>(memory_gib * static_cast<double>(kGiB));
  p.sm_active_pct = sm_pct;
  p.samples_per_s = 1000;
  p.startup_ms = 9000;
  return {name, job_features(command), p};
}

std::vector<std::string> train(const std::string& model, int batch, int image = 32) {
  return {"python3",      "train.py",           "--model",
          model,          "--batch-size",       std::to_string(batch),
          "--image-size", std::to_string(image)};
}

double gib(const JobProfile& p) { return static_cast<double>(*p.peak_memory_bytes) / kGiB; }

TEST(PriorModelTest, TheSameModelAtTheSameSizeIsAlmostKnown) {
  PriorModel m({sample("resnet50#1", train("resnet50", 128), 4, 40)}, 80 * kGiB);
  JobProfile p = m.prior(job_features(train("resnet50", 128)));
  EXPECT_DOUBLE_EQ(gib(p), 4);
  EXPECT_EQ(*p.sm_active_pct, 40);
  EXPECT_DOUBLE_EQ(p.memory_uncertainty, 0.1);
  EXPECT_EQ(p.startup_ms, 9000);
  EXPECT_DOUBLE_EQ(p.rate_uncertainty, 0.5) << "another job's rate is no solo rate of its own";
  EXPECT_THAT(p.source, HasSubstr("prior: resnet50 measured as resnet50#1, at the same size"));
}

TEST(PriorModelTest, OneMeasuredSizeIsScaledTwoAreFitted) {
  PriorModel one({sample("a", train("resnet50", 128), 4, 40)}, 80 * kGiB);
  JobProfile doubled = one.prior(job_features(train("resnet50", 256)));
  EXPECT_NEAR(gib(doubled), 4 * (0.3 + 0.7 * 2), 1e-6);
  EXPECT_DOUBLE_EQ(doubled.memory_uncertainty, 0.4);
  PriorModel two(
      {sample("a", train("resnet50", 128), 4, 40), sample("b", train("resnet50", 256), 7, 50)},
      80 * kGiB);
  JobProfile fitted = two.prior(job_features(train("resnet50", 512)));
  EXPECT_NEAR(gib(fitted), 13, 1e-6) << "the line through (128, 4) and (256, 7)";
  EXPECT_DOUBLE_EQ(fitted.memory_uncertainty, 0.25);
  EXPECT_EQ(*fitted.sm_active_pct, 50) << "the nearest size's";
}

TEST(PriorModelTest, AnUnseenModelIsFittedAcrossModelsBySize) {
  PriorModel m(
      {sample("a", train("resnet26", 128), 2, 20), sample("b", train("resnet50", 128), 4, 40),
       sample("c", train("resnet152", 128, 224), 40, 90)},
      80 * kGiB);
  JobProfile p = m.prior(job_features(train("vit_b16", 64, 224)));
  EXPECT_THAT(p.source, HasSubstr("fitted by size across the 3 jobs"));
  EXPECT_GE(gib(p), 4) << "never below the median";
  EXPECT_GE(p.memory_uncertainty, 0.5);
}

TEST(PriorModelTest, WithoutFeaturesAHighQuantileAndWithNothingAQuarterOfTheGpu) {
  PriorModel m(
      {sample("a", {"./a"}, 2, 20), sample("b", {"./b"}, 4, 40), sample("c", {"./c"}, 10, 90)},
      80 * kGiB);
  JobProfile q = m.prior(job_features({"./mystery"}));
  EXPECT_NEAR(gib(q), 8.8, 1e-9) << "the 90th percentile of 2, 4, 10";
  EXPECT_NEAR(*q.sm_active_pct, 80, 1e-9);
  EXPECT_THAT(q.source, HasSubstr("the 90th percentile of the 3 jobs"));
  JobProfile none = PriorModel({}, 80 * kGiB).prior(job_features({"./mystery"}));
  EXPECT_DOUBLE_EQ(gib(none), 20);
  EXPECT_EQ(*none.sm_active_pct, 50);
  EXPECT_DOUBLE_EQ(none.memory_uncertainty, 1.0);
  EXPECT_TRUE(none.admissible());
}

TEST(PriorModelTest, APriorNeverExceedsTheGpu) {
  PriorModel m({sample("a", train("big", 8), 60, 90)}, 80 * kGiB);
  EXPECT_DOUBLE_EQ(gib(m.prior(job_features(train("big", 64)))), 80);
}

}  // namespace
}  // namespace colo
