#include "profiling/interference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace colo {
namespace {

using ::testing::HasSubstr;

constexpr const char* kConv = "sm90_xmma_fprop_implicit_gemm_bf16bf16";
constexpr const char* kGemm = "ampere_sgemm_128x64_tn";
constexpr const char* kElementwise = "void at::native::vectorized_elementwise_kernel<4>";

ProfileWindow window(int n, double started_s) {
  ProfileWindow w;
  w.window = n;
  w.started_s = started_s;
  w.ended_s = started_s + 2;
  return w;
}

// Job a ran window 1 alone and window 2 beside two others; b, of a's
// signature, only beside one (it borrows a's alone window); c, of another
// signature, only beside (nothing to pair it with); d only alone.
TEST(PairWindows, PairsEachJobsLatestBesideWindowWithAnAloneOneOfItsOwnElseOfItsSignature) {
  const ProfileWindow a1 = window(1, 10), a2 = window(2, 50), a3 = window(3, 40);
  const ProfileWindow b1 = window(1, 52), c1 = window(1, 53), d1 = window(1, 5);
  const std::vector<PlacedWindow> placed = {{"a", "s", &a1, 0}, {"a", "s", &a2, 2},
                                            {"a", "s", &a3, 1}, {"b", "s", &b1, 1},
                                            {"c", "t", &c1, 1}, {"d", "u", &d1, 0}};
  const std::vector<AloneAndBeside> pairs = pair_windows(placed);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].job, "a");
  EXPECT_EQ(pairs[0].alone.window, &a1);
  EXPECT_EQ(pairs[0].beside.window, &a2);  // its latest beside others
  EXPECT_EQ(pairs[1].job, "b");
  EXPECT_EQ(pairs[1].alone.job, "a");
  EXPECT_EQ(pairs[1].beside.window, &b1);
}

// Convolutions 100 us alone and 150 us beside; GEMMs 50 and 60 us; an
// elementwise kernel only beside (no family in one window only is compared).
TEST(FamilySlowdowns, AreEachFamilysMeanKernelTimeBesideOverAlone) {
  const std::vector<KernelSpan> alone = {{0, 100, kConv}, {200, 300, kConv}, {400, 450, kGemm}};
  const std::vector<KernelSpan> beside = {{0, 150, kConv},
                                          {200, 350, kConv},
                                          {400, 460, kGemm},
                                          {500, 560, kGemm},
                                          {600, 700, kElementwise}};
  const std::vector<FamilySlowdown> f = family_slowdowns(alone, beside);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].family, "convolution");  // the most time beside first
  EXPECT_EQ(f[0].calls_alone, 2);
  EXPECT_DOUBLE_EQ(f[0].mean_us_alone, 100);
  EXPECT_DOUBLE_EQ(f[0].mean_us_beside, 150);
  EXPECT_DOUBLE_EQ(f[0].slowdown(), 1.5);
  EXPECT_EQ(f[1].family, "GEMM");
  EXPECT_EQ(f[1].calls_beside, 2);
  EXPECT_DOUBLE_EQ(f[1].slowdown(), 1.2);

  const ProfileWindow a = window(1, 0), b = window(2, 9);
  const PlacedWindow pa{"r26", "s", &a, 0}, pb{"r26", "s", &b, 2};
  const std::string text = format_family_slowdowns({"r26", pa, pb}, f);
  EXPECT_THAT(text,
              HasSubstr("r26: window 1 alone on its GPU against window 2 beside 2 other jobs"));
  EXPECT_THAT(text, HasSubstr("1.50x"));
  EXPECT_THAT(text, HasSubstr("1.20x"));
}

}  // namespace
}  // namespace colo
