#include "simulate/gpu_rates.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace colo {
namespace {

// What GpuRates keeps, found afresh: every GPU's rate from the jobs on it,
// in ascending order, and a job's the slowest of its GPUs' (at most 1).
struct Fresh {
  struct Job {
    std::vector<int> gpus;
    SoloLoad load;
  };
  std::map<uint64_t, Job> jobs;  // by order: ascending
  double rate_of(const InterferenceModel& model, ShareMode mode,
                 const std::vector<int>& gpus) const {
    double rate = 1.0;
    for (int g : gpus) {
      std::vector<SoloLoad> loads;
      for (const auto& [order, job] : jobs) {
        for (int h : job.gpus) {
          if (h == g) loads.push_back(job.load);
        }
      }
      rate = std::min(rate, model.rate_of_each(mode, loads));
    }
    return rate;
  }
};

struct Step {
  bool join = true;  // else leave
  uint64_t order = 0;
  std::vector<int> gpus;
  SoloLoad load;
};

struct RatesCase {
  std::string name;
  ShareMode mode = ShareMode::kSpatial;
  int gpus = 2;
  std::vector<Step> steps;
  // After the steps and update(): the rate of a job on these GPUs, and of
  // each GPU's jobs, bit for bit what the fresh computation gives.
  std::vector<std::vector<int>> ask;
};

class GpuRatesTable : public testing::TestWithParam<RatesCase> {};

TEST_P(GpuRatesTable, EqualsTheRateFoundAfresh) {
  const RatesCase& c = GetParam();
  const InterferenceModel model;
  GpuRates rates(c.gpus, model, c.mode);
  Fresh fresh;
  for (const Step& s : c.steps) {
    if (s.join) {
      rates.join(s.order, s.gpus, s.load);
      fresh.jobs[s.order] = {s.gpus, s.load};
    } else {
      rates.leave(s.order, s.gpus);
      fresh.jobs.erase(s.order);
    }
  }
  rates.update();
  for (const std::vector<int>& gpus : c.ask) {
    EXPECT_EQ(rates.rate_of(gpus), fresh.rate_of(model, c.mode, gpus))
        << c.name << ", gpus " << gpus.size() << " from " << gpus.front();
  }
}

constexpr SoloLoad kA{10.1, 20.3};
constexpr SoloLoad kB{20.2, 40.7};
constexpr SoloLoad kC{30.3, 60.1};
constexpr SoloLoad kHeavy{70, 100};

INSTANTIATE_TEST_SUITE_P(
    Cases, GpuRatesTable,
    testing::Values(
        RatesCase{
            "alone_goes_at_its_solo_rate", ShareMode::kSpatial, 1, {{true, 0, {0}, kA}}, {{0}}},
        RatesCase{"three_share_a_gpu",
                  ShareMode::kSpatial,
                  2,
                  {{true, 0, {0}, kA}, {true, 1, {0}, kB}, {true, 2, {0}, kHeavy}},
                  {{0}, {1}}},
        // Joined out of order (a job past its start-up after a later one):
        // the list is still in order. Busy shares whose sum (over 100%: the
        // rate is 100 / sum) differs by an ulp in the order they joined.
        RatesCase{"joined_out_of_order",
                  ShareMode::kTimeSliced,
                  1,
                  {{true, 5, {0}, {10, 17.8}},
                   {true, 2, {0}, {10, 85.5}},
                   {true, 9, {0}, {10, 77.6}},
                   {true, 3, {0}, {10, 29.2}}},
                  {{0}}},
        // A job that leaves no longer slows its GPU; leaving a GPU it never
        // joined changes nothing.
        RatesCase{"a_job_that_leaves_counts_no_more",
                  ShareMode::kSpatial,
                  2,
                  {{true, 0, {0}, kHeavy},
                   {true, 1, {0}, kHeavy},
                   {true, 2, {1}, kA},
                   {false, 0, {0}, {}},
                   {false, 2, {0}, {}}},
                  {{0}, {1}}},
        // A gang joins each of its GPUs and goes at the slowest one's rate.
        RatesCase{"a_gang_goes_at_its_slowest_gpu",
                  ShareMode::kSpatial,
                  3,
                  {{true, 0, {0, 1, 2}, kB}, {true, 1, {1}, kHeavy}, {true, 2, {2}, kA}},
                  {{0, 1, 2}, {1}, {2}, {0}}},
        RatesCase{"a_gang_leaves_every_gpu",
                  ShareMode::kTimeSliced,
                  2,
                  {{true, 0, {0, 1}, kHeavy},
                   {true, 1, {0}, kA},
                   {true, 2, {1}, kB},
                   {false, 0, {0, 1}, {}}},
                  {{0}, {1}}}),
    [](const testing::TestParamInfo<RatesCase>& info) { return info.param.name; });

// Many steps, update() after some of them only: the rates read after each
// update() are those found afresh, and GPUs not changed keep theirs.
TEST(GpuRates, SeededStepsEqualTheRatesFoundAfresh) {
  const InterferenceModel model;
  for (ShareMode mode : {ShareMode::kSpatial, ShareMode::kTimeSliced}) {
    std::mt19937 rng(7);
    constexpr int kGpus = 4;
    GpuRates rates(kGpus, model, mode);
    Fresh fresh;
    uint64_t next = 0;
    for (int step = 0; step < 400; ++step) {
      if (fresh.jobs.empty() || rng() % 3 != 0) {
        std::vector<int> gpus = {static_cast<int>(rng() % kGpus)};
        if (rng() % 5 == 0) gpus.push_back((gpus.front() + 1) % kGpus);
        const SoloLoad load{5.0 + static_cast<double>(rng() % 600) / 10.0,
                            10.0 + static_cast<double>(rng() % 900) / 10.0};
        // Now and then a job joins behind later ones (its start-up ended later).
        const uint64_t order = rng() % 4 == 0 && next > 3 ? next - 3 : next;
        if (fresh.jobs.contains(order)) continue;
        next = std::max(next, order + 1);
        rates.join(order, gpus, load);
        fresh.jobs[order] = {gpus, load};
      } else {
        auto it = fresh.jobs.begin();
        std::advance(it, static_cast<long>(rng() % fresh.jobs.size()));
        rates.leave(it->first, it->second.gpus);
        fresh.jobs.erase(it);
      }
      if (rng() % 2 == 0) continue;
      rates.update();
      for (int g = 0; g < kGpus; ++g) {
        ASSERT_EQ(rates.rate_of(std::vector<int>{g}), fresh.rate_of(model, mode, {g}))
            << "step " << step << ", gpu " << g;
      }
      for (const auto& [order, job] : fresh.jobs) {
        ASSERT_EQ(rates.rate_of(job.gpus), fresh.rate_of(model, mode, job.gpus))
            << "step " << step << ", job " << order;
      }
    }
  }
}

TEST(GpuRates, JobsOnCountsThoseThatJoined) {
  GpuRates rates(2, InterferenceModel{}, ShareMode::kSpatial);
  rates.join(0, std::vector<int>{0, 1}, kA);
  rates.join(1, std::vector<int>{0}, kB);
  EXPECT_EQ(rates.jobs_on(0), 2u);
  EXPECT_EQ(rates.jobs_on(1), 1u);
  rates.leave(0, std::vector<int>{0, 1});
  EXPECT_EQ(rates.jobs_on(0), 1u);
  EXPECT_EQ(rates.jobs_on(1), 0u);
}

}  // namespace
}  // namespace colo
