// BenchRunner: carries out one `colo bench` experiment. Every case is one
// run through run_job_file (the machinery of `colo run`, no second code
// path), under the case's mechanism, on one GPU. In order:
//
//   1. record the experiment and all its cases (planned, not_run)
//   2. for each case: stop if Ctrl-C was pressed (the remaining cases are
//      cancelled); skip it as does_not_fit when its jobs' summed memory cannot
//      fit the GPU (measured peaks of degree-1 cases of this experiment where
//      there are some, the planner's defaults otherwise); else run it and
//      record ok/failed/cancelled with its run id. A failed case does not
//      stop the experiment.
//   3. close the experiment: cancelled, failed (a case failed) or ok.
//
// Prints one line per case as it starts and ends ("case 5/23
// small/resnet26/mps/x3/r1: ok in 31.2s (run 7), steady 41230 samples/s,
// 2.59x steady speed-up (solo rates from small/resnet26/exclusive/x1/r1)"):
// the collocated speed-up of analysis/together.h against the solo rates of
// this experiment's cases that ran the same workloads alone. Not
// thread-safe; runs on the caller's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "bench/planner.h"
#include "bench/suite.h"
#include "bench/trainer.h"
#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "jobs/job_spec.h"
#include "run/run_controller.h"
#include "sharing/mechanism.h"
#include "store/run_store.h"

namespace colo {

// How a case's jobs are started.
// The jobs of one case, as `colo run` would read them from a job file:
// named "<model>#k" (k counts the jobs of one model), with the plan's epoch
// size, PYTHONUNBUFFERED=1 and a memory hint (the planner's default).
JobFile job_file_for(const BenchCase& c, const Plan& plan, const TrainerConfig& trainer,
                     const std::string& suite);

struct BenchRunOptions {
  std::string suite;
  std::string options_json;  // recorded with the experiment
  TrainerConfig trainer;
  RunOptions run;  // passed to every run_job_file (logs, display, sampling)
  int gpu = 0;     // the one GPU the experiment uses
};

// Everything the runner talks to, borrowed.
struct BenchContext {
  Clock& clock;
  GpuBackend& backend;  // all GPUs; the runner uses only options.gpu
  RunStore& store;
  MechanismOptions mechanism_options;
  std::ostream& out;
  const std::atomic<int>& stop_requests;  // as for run_job_file
};

struct BenchOutcome {
  int64_t experiment_id = 0;
  std::string state;  // "ok", "failed", "cancelled"
  int ok = 0;
  int failed = 0;
  int does_not_fit = 0;
  int not_run = 0;
  int cancelled = 0;
};

// Runs `cases` (from expand_suite) with the epoch sizes of `plan`. Errors
// only when the experiment could not be recorded or the GPU not read.
Result<BenchOutcome> run_bench(const std::vector<BenchCase>& cases, const Plan& plan,
                               const BenchRunOptions& options, BenchContext& ctx);

// A view of one GPU of another backend: devices() lists only that one (with
// its own index), everything else is forwarded. Borrows `inner`.
class OneDeviceBackend final : public GpuBackend {
 public:
  OneDeviceBackend(GpuBackend& inner, int index) : inner_(inner), index_(index) {}
  std::string name() const override { return inner_.name(); }
  bool simulated() const override { return inner_.simulated(); }
  std::string version() const override { return inner_.version(); }
  Result<std::vector<DeviceInfo>> devices() override;
  Result<DeviceSample> sample_device(int index) override { return inner_.sample_device(index); }
  Result<std::vector<ProcessSample>> sample_processes(int index) override {
    return inner_.sample_processes(index);
  }
  void process_started(int device, uint32_t pid, const SimLoadHint& hint) override {
    inner_.process_started(device, pid, hint);
  }
  void process_exited(uint32_t pid) override { inner_.process_exited(pid); }
  Result<std::vector<MigPlacementOption>> mig_placements(int device, int profile_id) override {
    return inner_.mig_placements(device, profile_id);
  }
  MigControl* mig_control() override { return inner_.mig_control(); }

 private:
  GpuBackend& inner_;
  int index_;
};

}  // namespace colo
