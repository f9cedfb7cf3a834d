// plan_mig and request parsing, table-driven over the layouts of the NVIDIA
// MIG user guide's A100-40GB figure.
#include "mig/mig_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "common/units.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

MigGeometry a100_40gb() {
  Result<MigGeometry> g = builtin_mig_geometry("A100-40GB");
  EXPECT_TRUE(g.ok());
  return *g;
}

// Checks a plan against the geometry's rules independently of the planner:
// every start allowed, no two instances overlapping, every instance placed.
void expect_valid(const MigGeometry& g, const std::vector<MigRequest>& requests,
                  const std::vector<MigPlacement>& plan) {
  int wanted = 0;
  for (const MigRequest& r : requests) wanted += r.count;
  ASSERT_EQ(static_cast<int>(plan.size()), wanted);
  std::vector<int> owner(static_cast<size_t>(g.memory_slices), -1);
  for (size_t i = 0; i < plan.size(); ++i) {
    const MigProfileSpec* p = g.find_profile(plan[i].profile);
    ASSERT_NE(p, nullptr);
    EXPECT_NE(std::find(p->starts.begin(), p->starts.end(), plan[i].start), p->starts.end())
        << plan[i].profile << " at " << plan[i].start;
    EXPECT_EQ(plan[i].size, p->memory_slices);
    for (int s = plan[i].start; s < plan[i].start + plan[i].size; ++s) {
      ASSERT_LT(s, g.memory_slices);
      EXPECT_EQ(owner[static_cast<size_t>(s)], -1) << "slice " << s << " used twice";
      owner[static_cast<size_t>(s)] = static_cast<int>(i);
    }
  }
}

struct LayoutCase {
  const char* request;
  const char* refusal;  // nullptr: must be placed; else a substring of the reason
};

// The A100-40GB layouts of the MIG user guide's "supported profiles" figure
// (each row of the figure is a combination of instances that fits), and
// combinations the figure rules out.
const LayoutCase kA100Layouts[] = {
    {"7g.40gb", nullptr},
    {"4g.20gb 3g.20gb", nullptr},
    {"4g.20gb 2g.10gb 1g.5gb", nullptr},
    {"4g.20gb 1g.5gb:3", nullptr},
    {"4g.20gb 1g.10gb:2", nullptr},
    {"4g.20gb 2g.10gb 1g.10gb", nullptr},
    {"4g.20gb 1g.10gb 1g.5gb:2", nullptr},
    {"3g.20gb:2", nullptr},
    {"3g.20gb 2g.10gb:2", nullptr},
    {"3g.20gb 2g.10gb 1g.5gb:2", nullptr},
    {"3g.20gb 2g.10gb 1g.10gb", nullptr},
    {"3g.20gb 1g.5gb:4", nullptr},
    {"3g.20gb 1g.10gb:2", nullptr},
    {"3g.20gb 1g.10gb 1g.5gb:2", nullptr},
    {"2g.10gb:3 1g.5gb", nullptr},
    {"2g.10gb:3 1g.10gb", nullptr},
    {"2g.10gb:2 1g.5gb:3", nullptr},
    {"2g.10gb:2 1g.10gb 1g.5gb:2", nullptr},
    {"2g.10gb 1g.5gb:5", nullptr},
    {"1g.5gb:7", nullptr},
    {"1g.10gb:4", nullptr},
    {"1g.10gb:3 1g.5gb:2", nullptr},
    {"1g.5gb+me 1g.5gb:6", nullptr},
    {"3g.20gb 1g.5gb:5", "needs 8 compute slices; the GPU has 7"},
    {"4g.20gb:2", "needs 2 x 4g.20gb; at most 1 fit"},
    {"7g.40gb 1g.5gb", "needs 8 compute slices; the GPU has 7"},
    {"2g.10gb:4", "needs 4 x 2g.10gb; at most 3 fit"},
    {"1g.10gb:5", "needs 5 x 1g.10gb; at most 4 fit"},
    {"1g.5gb+me:2", "needs 2 x 1g.5gb+me; at most 1 fit"},
    {"1g.5gb:8", "needs 8 x 1g.5gb; at most 7 fit"},
    {"3g.20gb:2 1g.5gb", "needs 9 memory slices; the GPU has 8"},
    {"1g.10gb:4 1g.5gb", "needs 9 memory slices; the GPU has 8"},
    {"4g.20gb 2g.10gb:2", "needs 8 compute slices"},
};

TEST(MigPlanner, A100FigureLayouts) {
  const MigGeometry g = a100_40gb();
  for (const LayoutCase& c : kA100Layouts) {
    SCOPED_TRACE(c.request);
    Result<std::vector<MigRequest>> requests = parse_mig_requests(g, {c.request});
    ASSERT_TRUE(requests.ok()) << requests.error().message();
    Result<std::vector<MigPlacement>> plan = plan_mig(g, *requests);
    if (c.refusal == nullptr) {
      ASSERT_TRUE(plan.ok()) << plan.error().message();
      expect_valid(g, *requests, *plan);
    } else {
      ASSERT_FALSE(plan.ok());
      EXPECT_THAT(plan.error().message(), HasSubstr(c.refusal));
    }
  }
}

TEST(MigPlanner, RefusalNamesTheRequest) {
  const MigGeometry g = a100_40gb();
  auto plan = plan_mig(g, *parse_mig_requests(g, {"3g.20gb", "1g.5gb:5"}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message(), "3g.20gb + 5 x 1g.5gb: needs 8 compute slices; the GPU has 7");
}

TEST(MigPlanner, BacktracksToTheStartThatLeavesRoom) {
  // 3g.20gb at 0 leaves only start 4 for the 2g.10gb instances; the planner
  // must put the 3g at 4 and both 2g below it.
  const MigGeometry g = a100_40gb();
  auto plan = plan_mig(g, *parse_mig_requests(g, {"3g.20gb 2g.10gb:2"}));
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  ASSERT_EQ(plan->size(), 3U);
  EXPECT_EQ((*plan)[0].profile, "2g.10gb");
  EXPECT_EQ((*plan)[0].start, 0);
  EXPECT_EQ((*plan)[1].start, 2);
  EXPECT_EQ((*plan)[2].profile, "3g.20gb");
  EXPECT_EQ((*plan)[2].start, 4);
}

TEST(MigPlanner, PrefersTheStartLeavingMoreRoomForLaterRequests) {
  // A lone 3g.20gb fits at 0 or 4; at 4 the low slices keep more starts free.
  const MigGeometry g = a100_40gb();
  auto plan = plan_mig(g, *parse_mig_requests(g, {"3g.20gb 1g.5gb"}));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->back().profile, "3g.20gb");
  EXPECT_EQ(plan->back().start, 4);
  EXPECT_EQ(plan->front().start, 0);
}

TEST(MigPlanner, FragmentationIsReportedWithTheAllowedStarts) {
  // A made-up geometry where slices and counts allow the request but starts do not.
  MigGeometry g;
  g.model = "test";
  g.profiles = {{1, "a", 1, 2, kGiB, 0, {0, 4}, 2}, {2, "b", 2, 4, kGiB, 0, {2}, 1}};
  auto plan = plan_mig(g, {{"a", 2, std::nullopt}, {"b", 1, std::nullopt}});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message(), HasSubstr("no non-overlapping starts"));
  EXPECT_THAT(plan.error().message(), HasSubstr("a starts {0,4} size 2; b starts {2} size 4"));
  // With one "a", a at 0..1 and b at 2..5 do not overlap.
  auto smaller = plan_mig(g, {{"a", 1, std::nullopt}, {"b", 1, std::nullopt}});
  ASSERT_TRUE(smaller.ok()) << smaller.error().message();
  EXPECT_EQ(smaller->front().start, 0);
}

TEST(MigPlanner, PlansAreDeterministic) {
  const MigGeometry g = a100_40gb();
  auto requests = *parse_mig_requests(g, {"2g.10gb 1g.5gb:2 1g.10gb"});
  auto first = plan_mig(g, requests);
  auto second = plan_mig(g, requests);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(first->size(), second->size());
  for (size_t i = 0; i < first->size(); ++i) {
    EXPECT_EQ((*first)[i].profile, (*second)[i].profile);
    EXPECT_EQ((*first)[i].start, (*second)[i].start);
  }
}

TEST(MigRequests, ParsingErrorsNameTheProblem) {
  const MigGeometry g = a100_40gb();
  auto unknown = parse_mig_requests(g, {"3g.20gb 3g.30gb"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message(),
            "unknown MIG profile '3g.30gb' for A100-40GB; valid profiles: 1g.5gb, 1g.5gb+me, "
            "1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb");
  for (const char* bad : {"1g.5gb:0", "1g.5gb:x", "1g.5gb:", "1g.5gb:-1", "1g.5gb:2x"}) {
    auto r = parse_mig_requests(g, {bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.error().message(), HasSubstr("must be a positive integer")) << bad;
  }
  auto mixed = parse_mig_requests(g, {"MIG 3G.20GB,1g.10gb:2", "7g.40gb"});
  ASSERT_FALSE(mixed.ok());  // "MIG" alone is not a profile
  auto ok = parse_mig_requests(g, {"3G.20GB,1g.10gb:2", "1g.5gb+ME"});
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  ASSERT_EQ(ok->size(), 3U);
  EXPECT_EQ((*ok)[0].profile, "3g.20gb");
  EXPECT_EQ((*ok)[1].count, 2);
  EXPECT_EQ((*ok)[2].profile, "1g.5gb+me");
  EXPECT_FALSE(plan_mig(g, {}).ok());
}

TEST(MigRequests, MemoryNeedsPickTheSmallestProfile) {
  Result<MigGeometry> h200 = builtin_mig_geometry("H200");
  ASSERT_TRUE(h200.ok());
  auto needs = parse_memory_needs("10GiB, 20GiB,16GiB,60GiB");
  ASSERT_TRUE(needs.ok()) << needs.error().message();
  auto requests = mig_requests_for_memory(*h200, *needs);
  ASSERT_TRUE(requests.ok()) << requests.error().message();
  std::vector<std::string> names;
  for (const MigRequest& r : *requests) names.push_back(r.profile);
  EXPECT_EQ(names, (std::vector<std::string>{"1g.18gb", "1g.35gb", "1g.18gb", "3g.71gb"}));
  EXPECT_EQ((*requests)[1].needed_bytes, 20 * kGiB);
  auto plan = plan_mig(*h200, *requests);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  expect_valid(*h200, *requests, *plan);

  auto too_big = mig_requests_for_memory(*h200, {200 * kGiB});
  ASSERT_FALSE(too_big.ok());
  EXPECT_THAT(too_big.error().message(), HasSubstr("the largest, 7g.141gb, has 140 GiB"));
  EXPECT_FALSE(parse_memory_needs("10GiB,lots").ok());
  EXPECT_FALSE(parse_memory_needs("").ok());
  EXPECT_FALSE(parse_memory_needs("0").ok());
  // Four jobs of 30 GiB on an H200: 4 x 1g.35gb fill all 8 memory slices.
  auto four = mig_requests_for_memory(*h200, {30 * kGiB, 30 * kGiB, 30 * kGiB, 30 * kGiB});
  ASSERT_TRUE(four.ok());
  EXPECT_TRUE(plan_mig(*h200, *four).ok());
  auto five = mig_requests_for_memory(*h200, std::vector<uint64_t>(5, 30 * kGiB));
  ASSERT_TRUE(five.ok());
  EXPECT_FALSE(plan_mig(*h200, *five).ok());
}

}  // namespace
}  // namespace colo
