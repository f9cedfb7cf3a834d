#include "gpu/open_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(OpenGpuBackend, NvmlWithoutDriverFailsWithOneActionableLine) {
  FakeClock clock;
  BackendOptions options;
  options.kind = BackendKind::kNvml;
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto backend = open_gpu_backend(options, clock);
  ASSERT_FALSE(backend.ok());
  const std::string& message = backend.error().message();
  EXPECT_THAT(message, HasSubstr("no NVIDIA driver found (/nonexistent/libnvidia-ml.so.1: "
                                 "cannot open shared object file"));
  EXPECT_THAT(message, HasSubstr("use --backend sim to run on the simulated GPU"));
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(OpenGpuBackend, AutoFallsBackToTheSimulator) {
  FakeClock clock;
  BackendOptions options;
  options.kind = BackendKind::kAuto;
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  options.sim_model = "H100";
  options.sim_device_count = 2;
  auto backend = open_gpu_backend(options, clock);
  ASSERT_TRUE(backend.ok()) << backend.error().message();
  EXPECT_TRUE((*backend)->simulated());
  EXPECT_EQ((*backend)->version(), "simulated H100");
  EXPECT_EQ((*backend)->devices()->size(), 2u);
}

TEST(OpenGpuBackend, SimPassesModelErrorsOn) {
  FakeClock clock;
  BackendOptions options;
  options.kind = BackendKind::kSim;
  options.sim_model = "B300";
  auto backend = open_gpu_backend(options, clock);
  ASSERT_FALSE(backend.ok());
  EXPECT_THAT(backend.error().message(), HasSubstr("unknown simulated GPU model 'B300'"));
}

}  // namespace
}  // namespace colo
