#include "profiling/timeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(KernelSpans, AreReadAndABadLineIsNamed) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("colo_spans_" + std::to_string(getpid())))
          .string();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/torch-kernels-1.tsv";
  std::ofstream(path) << "10.5\t12\tvoid gemm<float>(int)\n\n20\t21\tMemcpy HtoD\n";
  Result<std::vector<KernelSpan>> spans = read_kernel_spans(dir, path);
  ASSERT_TRUE(spans.ok()) << spans.error().message();
  ASSERT_EQ(spans->size(), 2u);
  EXPECT_DOUBLE_EQ((*spans)[0].start_us, 10.5);
  EXPECT_EQ((*spans)[0].name, "void gemm<float>(int)");
  std::ofstream(path) << "1\t2\tok\n5\tx\tbad\n";
  Result<std::vector<KernelSpan>> bad = read_kernel_spans(dir, path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr(path + ":2: expected"));
  // The job's summary names its spans: none outside its directory, no link.
  std::ofstream(dir + "/../colo_spans_outside") << "1\t2\tsecret\n";
  Result<std::vector<KernelSpan>> outside = read_kernel_spans(dir, dir + "/../colo_spans_outside");
  ASSERT_FALSE(outside.ok());
  EXPECT_THAT(outside.error().message(), HasSubstr("is not a file of the job's profile directory"));
  std::filesystem::remove(dir + "/../colo_spans_outside");
  std::filesystem::remove(path);
  std::filesystem::create_symlink("/dev/zero", path);
  Result<std::vector<KernelSpan>> linked = read_kernel_spans(dir, path);
  ASSERT_FALSE(linked.ok());
  EXPECT_THAT(linked.error().message(), HasSubstr("is a symbolic link"));
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(read_kernel_spans(dir, path).ok());
}

TEST(KernelFamily, NamesTheCommonKernelsOfTraining) {
  EXPECT_EQ(kernel_family("sm90_xmma_fprop_implicit_gemm_bf16bf16"), "convolution");
  EXPECT_EQ(kernel_family("ampere_sgemm_128x64_tn"), "GEMM");
  EXPECT_EQ(kernel_family("void at::native::batch_norm_backward_kernel<float>"), "normalization");
  EXPECT_EQ(kernel_family("void cudnn::engines_precompiled::nchwToNhwcKernel<float>"), "layout");
  EXPECT_EQ(kernel_family("void at::native::vectorized_elementwise_kernel<4>"), "elementwise");
  EXPECT_EQ(kernel_family("void at::native::reduce_kernel<512, 1>"), "reduction");
  EXPECT_EQ(kernel_family("Memcpy HtoD (Pageable -> Device)"), "memcpy");
  EXPECT_EQ(kernel_family("something_else"), "other");
}

// Job a busy 0-40 and 60-70 us, job b 30-50 us (and a span outside the
// window), over a window of 0-100 us: idle 40, two at once 10 (30-40).
TEST(TimelineStats, SplitsTheWindowByHowManyJobsRanKernels) {
  std::vector<TimelineLane> lanes = {
      {"a", {{0, 20, "gemm_a"}, {10, 40, "gemm_b"}, {60, 70, "Memcpy HtoD"}}},
      {"b", {{30, 50, "elementwise_kernel"}, {150, 160, "gemm"}}}};
  const TimelineStats s = timeline_stats(lanes, 0, 100);
  EXPECT_DOUBLE_EQ(s.busy_us[0], 50);
  EXPECT_DOUBLE_EQ(s.busy_us[1], 20);
  EXPECT_DOUBLE_EQ(s.only_us[0], 40);
  EXPECT_DOUBLE_EQ(s.shared_us[0], 10);
  EXPECT_DOUBLE_EQ(s.only_us[1], 10);
  EXPECT_DOUBLE_EQ(s.shared_us[1], 10);
  EXPECT_DOUBLE_EQ(s.idle_us(), 40);
  EXPECT_DOUBLE_EQ(s.overlap_us(), 10);
  EXPECT_DOUBLE_EQ(s.lanes_busy_us[1], 50);
  // Families sum the spans (overlapping ones of a job too) inside the window.
  EXPECT_DOUBLE_EQ(s.families[0].at("GEMM").first, 50);
  EXPECT_EQ(s.families[0].at("GEMM").second, 2);
  EXPECT_EQ(s.families[1].count("GEMM"), 0u);  // outside the window

  const std::string text = format_timeline(lanes, s);
  EXPECT_THAT(text, HasSubstr("the GPU ran none of their kernels 0.0 ms of it (40.0%)"));
  EXPECT_THAT(text, HasSubstr("two jobs or more at once 0.0 ms (10.0%)"));
  const std::string html = timeline_html("GPU 0", lanes, s);
  EXPECT_THAT(html, HasSubstr("<svg"));
  EXPECT_THAT(html, HasSubstr(">a</text>"));
  EXPECT_THAT(html, HasSubstr("two jobs or more"));
  EXPECT_THAT(html, HasSubstr("around the longest overlap"));
}

}  // namespace
}  // namespace colo
