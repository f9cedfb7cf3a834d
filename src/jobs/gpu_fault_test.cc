#include "jobs/gpu_fault.h"

#include <gtest/gtest.h>

#include <string>

namespace colo {
namespace {

// The client whose kernel asserted prints the assertion (one line per failing
// thread), then PyTorch's error and its hints.
TEST(GpuFault, AnAssertionIsTheJobsOwnFaultAndNamesIt) {
  const GpuFaultSeen seen = find_gpu_fault(
      "epoch 2/12: 2.1s\n"
      "/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
      "block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
      "/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
      "block: [0,0,0], thread: [6,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
      "Traceback (most recent call last):\n"
      "RuntimeError: CUDA error: device-side assert triggered\n"
      "CUDA kernel errors might be asynchronously reported at some other API call, so the "
      "stacktrace below might be incorrect.\n"
      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n");
  EXPECT_EQ(seen.kind, GpuFault::kOwn);
  EXPECT_TRUE(seen.assertion);
  EXPECT_EQ(seen.line,
            "Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: Assertion `t >= 0 && t < "
            "n_classes` failed.");
}

TEST(GpuFault, AnIllegalAddressIsTheJobsOwn) {
  const GpuFaultSeen seen = find_gpu_fault(
      "step 10\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n");
  EXPECT_EQ(seen.kind, GpuFault::kOwn);
  EXPECT_FALSE(seen.assertion);
  EXPECT_EQ(seen.line, "RuntimeError: CUDA error: an illegal memory access was encountered");
}

// PyTorch's hints name device-side assertions after every CUDA error: a
// client that suffered a neighbour's fault is affected, not its cause.
TEST(GpuFault, TheConsequencesOfANeighboursFaultAreAffectedEvenWithPyTorchsHints) {
  for (const char* error :
       {"RuntimeError: CUDA error: the MPS client has been terminated by the server. To continue "
        "using CUDA, the process must be terminated and relaunched",
        "RuntimeError: CUDA error: MPS server is not ready to accept new MPS client requests",
        "torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
        "cudaErrorMpsServerNotReady"}) {
    const GpuFaultSeen seen = find_gpu_fault(
        std::string(error) +
        "\nCUDA kernel errors might be asynchronously reported at some other API call\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n");
    EXPECT_EQ(seen.kind, GpuFault::kAffected) << error;
    EXPECT_EQ(seen.line, error);
  }
}

TEST(GpuFault, OrdinaryFailuresAreNoFault) {
  EXPECT_EQ(find_gpu_fault("").kind, GpuFault::kNone);
  EXPECT_EQ(find_gpu_fault("Traceback (most recent call last):\n"
                           "ModuleNotFoundError: No module named 'timm'\n")
                .kind,
            GpuFault::kNone);
  EXPECT_EQ(find_gpu_fault("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
                           "GiB\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side "
                           "assertions.\n")
                .kind,
            GpuFault::kNone);
}

// colo's own notes in a job's log name a neighbour's fault (its assertion
// included): they are colo's, not the job's, and show no fault of its own.
TEST(GpuFault, ColosOwnNotesInTheLogAreNotTheJobs) {
  const std::string note =
      "colo: buggy raised a fatal GPU fault on gpu0 under MPS (Loss.cu:250: kernel: Assertion `t "
      ">= 0 && t < n_classes` failed.); watched\n";
  EXPECT_EQ(find_gpu_fault("epoch 2/12: 2.1s\n" + note).kind, GpuFault::kNone);
  const GpuFaultSeen seen = find_gpu_fault(
      "epoch 2/12: 2.1s\n" + note +
      "RuntimeError: CUDA error: the MPS client has been terminated by the server.\n");
  EXPECT_EQ(seen.kind, GpuFault::kAffected);
  EXPECT_FALSE(seen.assertion);
}

}  // namespace
}  // namespace colo
