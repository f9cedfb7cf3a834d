// JobRuntime: the live state of one job in a RunEngine (run/run_engine.h),
// from its submission to its recorded end, across its attempts. Plain data
// owned by the engine; private to run/ (run_engine.cc and its test).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "jobs/job_state.h"
#include "jobs/progress.h"
#include "run/attempt_end.h"
#include "run/engine_job.h"
#include "run/floor_watch.h"
#include "run/in_place_measurement.h"
#include "run/objective_watch.h"
#include "run/simulated_load.h"
#include "run/stall_watch.h"

namespace colo {

struct JobRuntime {
  size_t key = 0;
  EngineJob job;
  const std::string& label() const { return job.label.empty() ? job.spec.name : job.label; }
  // The trials early stopping compares it with (run/early_stop.h).
  const std::string& sweep() const {
    return job.trials_of.empty() ? job.spec.source : job.trials_of;
  }
  std::string signature;
  JobState state = JobState::kQueued;
  std::optional<int> device;
  std::vector<int> gang_devices;  // a gang's GPUs, `device` first
  pid_t pid = 0;
  UnixMillis started_ms = 0;
  UnixMillis ended_ms = 0;
  int64_t epochs = 0;
  std::optional<int64_t> epoch;
  UnixMillis last_epoch_end_ms = 0;
  std::optional<int64_t> last_epoch_ms;
  std::optional<double> last_samples_per_s;
  // Held apart (1.3 KB): most of a long queue's jobs never start.
  std::unique_ptr<ProgressReader> reader;
  std::string note;
  int attempt = 1;
  // Why colo is stopping this attempt, when it is (attempt_end.h).
  StopCause cause;
  // Auto policy: a newcomer is measured where it runs (InPlaceMeasurement);
  // its first profile goes to the scheduler once its memory plateaued. A
  // speculative sibling (Decision::record) is measured too, and what it saw
  // only recorded.
  std::optional<InPlaceMeasurement> measuring;
  bool measurement_sent = false;
  bool record_only = false;
  UnixMillis last_rate_ms = 0;               // time of the last progress event with samples
  uint64_t peak_memory_bytes = 0;            // largest summed memory of its processes seen
  std::optional<int64_t> first_progress_ms;  // since its start
  // What the mechanism gave the running attempt (see EngineJobView).
  std::optional<int> mps_sm_share_pct;
  std::optional<uint64_t> mps_memory_limit_bytes;
  std::optional<int> opportunistic_thread_pct;
  std::string mig_instance;
  std::optional<SimulatedLoad> sim_load;  // what the simulated backend is told
  // Faults (see the file comment of run_engine.h).
  std::optional<StallWatch> stall;  // this attempt's
  bool reported_progress = false;   // in any attempt
  std::string fault_watched;        // the GPU fault it is watched after (it had run on)
  int64_t cpu_read_ms = 0;          // when its CPU time was last read (monotonic)
  bool outside_mps = false;         // this attempt runs outside the shared MPS server
  std::string suspect;              // why its next attempt runs outside the shared server
  std::string fault_proven;         // why a fault it raised under MPS was its own
  int uncounted = 0;                // attempts that ended through no fault of its own
  int preemptions = 0;              // attempts it was preempted in (not counted either)
  int64_t log_checked_ms = 0;       // when its log's size was last checked (monotonic)
  bool log_cut = false;             // its log was cut to its cap (said once)

  // A protected job's floor, judged over its steady epochs across its attempts.
  std::optional<FloorWatch> floor;
  bool floor_alone_said = false;  // below its floor with no opportunistic neighbour: said once
  // Whether it reports its job file's [objective] (set when it declares one),
  // across its attempts: warned of once.
  std::optional<ObjectiveWatch> objective;

  int counted_attempts() const { return attempt - uncounted - preemptions - job.uncounted_before; }
  std::vector<int> gpus() const { return job_gpus(device, gang_devices); }
};

}  // namespace colo
