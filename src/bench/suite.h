// Benchmark suites: the paper's experiments (sections 3.2 and 3.3) as data,
// and their expansion into cases.
//
// A case is one `colo run`: a set of jobs under one mechanism. Suites:
//
//   paper-uniform  each workload (small: resnet26; medium: resnet50 and
//                  efficientnetv2_s; large: resnet152 and cait_xxs24_224) at
//                  degree 1, 2, 3 and 7 under naive, mps and mig, plus one
//                  exclusive degree-1 baseline. (Exclusive at degree k would
//                  be k solo runs one after another: k times the baseline.)
//   paper-mixed    S+M+M, S+S+M+M, S+M+M+M under serial (the exclusive
//                  mechanism: the mix's jobs one at a time), naive, mps, mig.
//   paper-recsys   a DLRM-style recommender alone, ResNet152 alone (both
//                  exclusive: their sum is the serial time), and the two
//                  together under naive, mps and mig.
//
// colo has no MIG mechanism yet: MIG cases are listed with status not_run and
// the reason. Cases whose mechanism cannot run here (no MPS control program)
// likewise.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "gpu/gpu_backend.h"

namespace colo {

// One training configuration of bench/train.py (or bench/dlrm.py).
struct Workload {
  std::string model;    // "resnet26", ..., "dlrm"
  std::string dataset;  // "cifar10", "imagenet64", "imagenet"; "criteo" for dlrm
  int batch_size = 0;
  // "resnet26/cifar10/b128": the key of planner tables and measured peaks.
  std::string label() const;
  bool operator==(const Workload&) const = default;
};

// The paper's workloads.
Workload small_resnet26();       // S: resnet26 / cifar10 / batch 128
Workload medium_resnet50();      // M: resnet50 / imagenet64 / batch 128
Workload medium_efficientnet();  // efficientnetv2_s / imagenet64 / batch 32
Workload large_resnet152();      // L: resnet152 / imagenet / batch 32
Workload large_cait();           // cait_xxs24_224 / imagenet / batch 128
Workload recsys_dlrm();          // dlrm / criteo / batch 2048

struct BenchCase {
  std::string name;                // unique in a suite: "small/resnet26/mps/x3/r1"
  std::string workload;            // "small", "medium", "large", "mixed", "recsys"
  std::string models;              // "resnet26", "S+M+M", "dlrm+resnet152"
  std::string mechanism;           // "exclusive", "naive", "mps", "mig"
  bool serial = false;             // exclusive running several jobs one after another
  int degree = 1;                  // jobs in the case
  int repetition = 1;              // 1-based
  std::vector<Workload> jobs;      // one per job, in start order
  std::string status = "planned";  // "planned", or "not_run" (reason says why)
  std::string reason;
};

struct SuiteInfo {
  std::string name;
  std::string description;
};

// The suites colo knows, in the order `colo bench --list` shows them.
const std::vector<SuiteInfo>& bench_suites();

struct ExpandOptions {
  int repetitions = 1;                  // each case this many times (r1..rN)
  std::vector<std::string> case_globs;  // fnmatch patterns over case names; empty: all
  // Why MIG cases cannot run here (mig_not_run_reason); empty: they run.
  std::string mig_reason;
  // Why mps cases cannot run here; empty when they can.
  std::string mps_reason;
};

// Expands `suite` into its cases: repetition 1 of every case, then
// repetition 2, ... An unknown suite, repetitions < 1, or globs that match no
// case are errors that say what exists.
Result<std::vector<BenchCase>> expand_suite(const std::string& suite, const ExpandOptions& options);

// Why colo runs no MIG case on `device`: MIG mode off ("MIG mode is disabled
// on gpu0 (colo never changes it)") or no MIG ("this GPU has no MIG"); ""
// when MIG mode is on and MIG cases run.
std::string mig_not_run_reason(const DeviceInfo& device);

// Splits "a,b" into {"a", "b"} (empty pieces dropped).
std::vector<std::string> split_globs(const std::string& text);

}  // namespace colo
