#include "jobs/log_reason.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace colo {
namespace {

const char* kind_name(LogLineKind kind) {
  switch (kind) {
    case LogLineKind::kCudaAssertion:
      return "cuda assertion";
    case LogLineKind::kNcclError:
      return "nccl error";
    case LogLineKind::kException:
      return "exception";
    case LogLineKind::kToolError:
      return "tool error";
    case LogLineKind::kNcclWarning:
      return "nccl warning";
    case LogLineKind::kTorchrunRootCause:
      return "torchrun root cause";
    case LogLineKind::kOutOfMemory:
      return "out of memory";
    case LogLineKind::kLastLine:
      return "last line";
    case LogLineKind::kNone:
      return "none";
  }
  return "?";
}

// A log under tests/logs/ (see its README.md) and the line it must yield.
struct LogFixture {
  const char* file;
  LogLineKind kind;
  std::string line;
};

// One row per fixture: adding a log is adding a row.
const LogFixture kLogFixtures[] = {
    {"synthetic-device-assert.log", LogLineKind::kCudaAssertion,
     "Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: Assertion `t >= 0 && t < n_classes` "
     "failed."},
    {"mps-rpc-failure.log", LogLineKind::kException,
     "torch.AcceleratorError: CUDA error: the remote procedural call between the MPS server and "
     "the MPS client failed"},
    {"cuda-oom-dlrm.log", LogLineKind::kException,
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.08 GiB. GPU 0 has a total "
     "capacity of 79.18 GiB of which 884.60 MiB is free. Process 3762 has 66.00 MiB memory in "
     "use. Process 3510 has..."},
    {"cuda-oom-resnet.log", LogLineKind::kException,
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total "
     "capacity of 79.18 GiB of which 9.85 MiB is free. Process 515 has 66.00 MiB memory in use. "
     "Process 441 has 734..."},
    {"python-traceback.log", LogLineKind::kException,
     "FileNotFoundError: [Errno 2] No such file or directory: 'config.json'"},
    {"python-chained.log", LogLineKind::kException,
     "ValueError: invalid literal for int() with base 10: '12x'"},
    {"torchrun-rank1-raises.log", LogLineKind::kException,
     "RuntimeError: rank 1 failed in epoch 2: loss diverged"},
    {"torchrun-tee-rank1-raises.log", LogLineKind::kException,
     "RuntimeError: rank 1 failed in epoch 2: loss diverged"},
    {"torchrun-rank1-exits.log", LogLineKind::kException,
     "RuntimeError: [./gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:2466: Connection "
     "reset by peer"},
    {"h100-torchrun-nccl-rank1-exits.log", LogLineKind::kTorchrunRootCause,
     "torchrun: rank 1 (local_rank: 1) failed first, exitcode 1 (pid: 749)"},
    {"h100-mps-device-assert.log", LogLineKind::kCudaAssertion,
     "Loss.cu:245: nll_loss_forward_reduce_cuda_kernel_2d: Assertion `t >= 0 && t < n_classes` "
     "failed."},
    {"h100-mps-busy-or-unavailable.log", LogLineKind::kException,
     "torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"},
    // Nsight Compute's error, not its "==PROF== Disconnected" banner after it.
    {"synthetic-ncu-under-mps.log", LogLineKind::kToolError,
     "==ERROR== Profiling is not supported with Multi-Process Server (MPS) enabled on device 0. "
     "Start ncu with --mps client to profile MPS processes."},
    {"torchrun-rank1-sigkill.log", LogLineKind::kException,
     "RuntimeError: [./gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:6354: Connection "
     "reset by peer"},
};

std::string read_log(const std::string& name) {
  const char* source = std::getenv("COLO_SOURCE_DIR");
  if (source == nullptr) return "";
  std::ifstream in(std::string(source) + "/tests/logs/" + name, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LogReason, EachFixtureYieldsItsLine) {
  ASSERT_NE(std::getenv("COLO_SOURCE_DIR"), nullptr) << "run through ctest (COLO_SOURCE_DIR)";
  for (const LogFixture& f : kLogFixtures) {
    const std::string log = read_log(f.file);
    ASSERT_FALSE(log.empty()) << "tests/logs/" << f.file << " is missing or empty";
    const InformativeLine got = find_informative_log_line(log);
    EXPECT_EQ(got.text, f.line) << f.file;
    EXPECT_STREQ(kind_name(got.kind), kind_name(f.kind)) << f.file;
  }
}

TEST(LogReason, TheFirstAssertionWinsOverEverythingAfterIt) {
  const std::string log =
      "x.cu:1: k: block: [0,0,0], thread: [1,0,0] Assertion `a` failed.\n"
      "y.cu:2: k: block: [0,0,0], thread: [2,0,0] Assertion `b` failed.\n"
      "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970\n"
      "RuntimeError: CUDA error: device-side assert triggered\n";
  EXPECT_EQ(informative_log_line(log), "x.cu:1: k: Assertion `a` failed.");
  // glibc's assert() is one too; the program's directories go.
  EXPECT_EQ(informative_log_line("python3: ../src/pool.c:12: grow: Assertion `n > 0' failed.\n"),
            "python3: pool.c:12: grow: Assertion `n > 0' failed.");
  // Too long with its kernel: from "Assertion" on.
  const std::string kernel(180, 'k');
  EXPECT_EQ(informative_log_line("/a/b.cu:9: " + kernel + ": Assertion `x` failed.\n"),
            "Assertion `x` failed.");
}

TEST(LogReason, NcclErrorsComeBeforeExceptions) {
  const std::string log =
      "ValueError: first\n"
      "[rank7]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:275, unhandled "
      "cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
      "[rank7]: ncclUnhandledCudaError: Call to CUDA function failed.\n";
  const InformativeLine got = find_informative_log_line(log);
  EXPECT_EQ(got.kind, LogLineKind::kNcclError);
  EXPECT_EQ(got.text,
            "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:275, unhandled cuda "
            "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5");
  // NCCL_DEBUG's warnings may be harmless: after exceptions.
  EXPECT_EQ(
      informative_log_line("h:1:2 [0] NCCL WARN Cuda failure 'out of memory'\nKeyError: 'x'\n"),
      "KeyError: 'x'");
  EXPECT_EQ(informative_log_line("h:1:2 [0] NCCL WARN Cuda failure 'out of memory'\nbye\n"),
            "h:1:2 [0] NCCL WARN Cuda failure 'out of memory'");
}

TEST(LogReason, ExceptionLines) {
  // Rank prefixes go; wrappers that only say a child failed are skipped.
  EXPECT_EQ(informative_log_line("[rank1]: RuntimeError: boom\n"
                                 "torch.distributed.elastic.multiprocessing.errors."
                                 "ChildFailedError: \n"),
            "RuntimeError: boom");
  EXPECT_EQ(informative_log_line("[default0]:[rank0]: KeyboardInterrupt\n"), "KeyboardInterrupt");
  EXPECT_EQ(informative_log_line("subprocess.CalledProcessError: Command 'x' returned 1.\n"
                                 "OSError: [Errno 28] No space left on device\n"),
            "OSError: [Errno 28] No space left on device");
  EXPECT_EQ(informative_log_line("subprocess.CalledProcessError: Command 'x' returned 1.\nbye\n"),
            "subprocess.CalledProcessError: Command 'x' returned 1.");
  // Not exceptions: a program's name, a lower-case word, a warning, a log level.
  const InformativeLine plain =
      find_informative_log_line("train.py: started\nerror: no\nUserWarning: x\nINFO: done\n");
  EXPECT_EQ(plain.kind, LogLineKind::kLastLine);
  EXPECT_EQ(plain.text, "INFO: done");
}

TEST(LogReason, OutOfMemoryWhenNoExceptionSaysMore) {
  const InformativeLine got =
      find_informative_log_line("terminate called: CUBLAS_STATUS_ALLOC_FAILED\nAborted\n");
  EXPECT_EQ(got.kind, LogLineKind::kOutOfMemory);
  EXPECT_EQ(got.text, "terminate called: CUBLAS_STATUS_ALLOC_FAILED");
}

// torchrun's report of which rank failed first says more than its banner,
// fields and hints, which are never the reason.
TEST(LogReason, TorchrunsRootCauseIsSummedUpAndItsBannersAndHintsSkipped) {
  const std::string log =
      "epoch 3 loss 0.2\n"
      "gang.py FAILED\n"
      "----------\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  time      : 2026-11-28_01:21:59\n"
      "  rank      : 0 (local_rank: 0)\n"
      "  exitcode  : 1 (pid: 11057)\n"
      "  error_file: <N/A>\n"
      "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
      "============================================================\n"
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
      "   ^^^^^^\n\n";
  const InformativeLine root = find_informative_log_line(log);
  EXPECT_EQ(root.kind, LogLineKind::kTorchrunRootCause);
  EXPECT_EQ(root.text, "torchrun: rank 0 (local_rank: 0) failed first, exitcode 1 (pid: 11057)");
  const std::string without_report = log.substr(0, log.find("Root Cause"));
  EXPECT_EQ(informative_log_line(without_report + "=====\n"), "gang.py FAILED");
  EXPECT_EQ(informative_log_line("=====\n-----\n"), "");
  EXPECT_EQ(informative_log_line(""), "");
  EXPECT_EQ(find_informative_log_line(" \n\r\n").kind, LogLineKind::kNone);
}

// A rank of a DDP gang that ran out of memory under its MPS limit (an H200,
// torch 2.11, NCCL 2.28.9): PyTorch's exception says "unhandled cuda error";
// NCCL's line before it says out of memory.
TEST(FindOomMessage, NcclsCudaFailureOfARankIsOutOfMemory) {
  const std::string log =
      "[rank1]: torch.distributed.DistBackendError: NCCL error in: "
      "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3780, unhandled cuda error (run "
      "with NCCL_DEBUG=INFO for details), NCCL version 2.28.9\n"
      "[rank1]: Cuda failure 2 'out of memory'\n";
  EXPECT_EQ(find_oom_message(log), "[rank1]: Cuda failure 2 'out of memory'");
  EXPECT_FALSE(find_oom_message("[rank1]: NCCL error: unhandled system error\n"));
}

}  // namespace
}  // namespace colo
