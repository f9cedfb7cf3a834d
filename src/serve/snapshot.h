// ServiceSnapshot: everything a reader of the service sees, at one instant:
// the service itself, its GPUs with their latest samples, the jobs (queued,
// running, recently ended), recent device samples, and recent runs.
//
// It has ONE JSON serialization (to_json / snapshot_from_json), with the
// shape documented in docs/serve.md: `colo queue --json` prints it, the
// Unix-socket API answers with it, and later readers (an HTTP API, a
// dashboard, `colo top`) reuse it unchanged. Fields are only ever added;
// "version" counts incompatible changes. Absent values are null.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "gpu/device_json.h"
#include "gpu/gpu_backend.h"
#include "store/run_store.h"

namespace colo {

inline constexpr int kSnapshotVersion = 1;

struct ServiceInfo {
  pid_t pid = 0;
  std::string user;  // the service runs as
  std::string host;
  UnixMillis started_ms = 0;
  std::string backend;  // "nvml" | "sim"
  bool simulated = false;
  std::string mechanism;  // "exclusive" | "naive" | "mps"
  std::string policy;     // as the policy describes itself ("auto", "fixed, up to 4 jobs per GPU")
  int64_t run_id = 0;     // the store's run of this service process
  std::string state;      // "running" | "draining" | "stopping"
  std::string mechanism_down;  // why no job is placed now; "" when the mechanism is up
  std::string store;           // the run store's path
  std::string http;            // the HTTP API's address ("127.0.0.1:8470"); "" when off
  // Under mps: "shared" (one multi-user server: users' jobs run together) or
  // "separate" (a daemon per user: their jobs time-slice); else "".
  std::string mps_users;
};

// One job of the queue, as users see it.
struct QueueJob {
  int64_t id = 0;  // the service job id (`colo cancel ID`)
  std::string name;
  std::string group;
  std::string owner;
  uid_t owner_uid = 0;
  std::string state;  // to_string(JobState): "queued", "running", "ok", "failed", ...
  std::string reason;
  std::optional<int> gpu;
  std::vector<int> gang_gpus;  // a running gang's GPUs (`gpu` first); empty otherwise
  std::string mechanism;
  int attempts = 0;  // started so far
  std::optional<int64_t> epoch;
  std::optional<double> samples_per_s;
  std::optional<int64_t> last_epoch_ms;
  std::optional<UnixMillis> predicted_end_ms;
  std::optional<uint64_t> peak_memory_bytes;
  UnixMillis submitted_ms = 0;
  std::optional<UnixMillis> started_ms;
  std::optional<UnixMillis> ended_ms;
  std::string job_file;
  std::optional<int64_t> run_id;  // the run of its latest attempt, when it started in this one
  // The submission it came in (RUN/SUB as `colo submit` printed it): its id,
  // its service run and its name ("" when it has none); null for a job
  // stored before submissions were (store version 17), and the run when
  // the store names none.
  std::optional<int64_t> submission_id;
  std::optional<int64_t> submission_run_id;
  std::string submission_name;
  bool probe = false;  // running alone so that its profile is measured (auto)
  // The running attempt's main process.
  std::optional<uint32_t> pid;
  // Its MPS limits (active thread percentage, pinned device memory) when it
  // runs under MPS with them; its MIG instance ("" when none).
  std::optional<int> mps_sm_share_pct;
  std::optional<uint64_t> mps_memory_limit_bytes;
  std::string mig_instance;
  // Its progress rate alone (a stored profile, a hint or a probe); see slowdown().
  std::optional<double> solo_samples_per_s;
  // Running: why colo found it stalled and is stopping it ("" when it is not).
  std::string stalled;
  // Running outside the shared MPS server: a GPU fault's suspect, run alone.
  bool outside_mps = false;
  // Its class (jobs/job_qos.h): "protected", "normal", "opportunistic"; a
  // protected job's floor, a fraction of its solo speed (null otherwise).
  std::string qos = "normal";
  std::optional<double> min_speed;
  // A protected job against its floor, over its steady epochs so far (every
  // attempt; run/floor_watch.h): its latest steady epoch's rate over its solo
  // rate, the share of its steady time spent below the floor, and the steady
  // time judged and of it below (null before a steady epoch was judged, and
  // for the others).
  std::optional<double> speed_of_solo;
  std::optional<double> below_floor_share;
  std::optional<int64_t> steady_ms;
  std::optional<int64_t> below_floor_ms;
};

// The class as `colo queue`, `colo top` and the dashboard mark it: "" for a
// normal job, "opp" for an opportunistic one, for a protected one "P 0.90"
// (its floor), with its latest speed of solo once measured ("P 0.90|0.94")
// and, when some of its steady time was below the floor, that share ("P
// 0.90|0.84 12%").
std::string qos_marker(const QueueJob& job);

// The state as people read it: "stalled" for a running job found stalled.
std::string shown_state(const QueueJob& job);

// The name each of `jobs` is listed by (`colo queue`, the dashboard's
// overview, `colo top`), in their order: its own, or, where another job of
// the list has the same name but came in another submission, its name after
// its submission's title, as a service run's report names them
// (analysis/run_summary.h, submission_title): "#3/5 lr-b: sw[lr=0.2]". A job
// of no known submission keeps its name. Written to the snapshot's JSON as
// each job's "listed_name" (derived: readers never send it back).
std::vector<std::string> listed_names(const std::vector<QueueJob>& jobs);

// The GPUs the job runs on: a gang's several, else its one (none when not running).
std::vector<int> gpus_of(const QueueJob& j);

// A job of the queue as the store has it (none of the live values of an
// attempt: epoch, rate, predicted end, memory, its run): what the HTTP API
// shows of a job the snapshot no longer holds, and the start of what the
// service shows of every job.
QueueJob queue_job_of(const ServiceJobRow& row, const std::string& mechanism);
// "0,1" or "0"; "-" when none.
std::string gpus_text(const QueueJob& j);

// How many times slower the job progresses now than alone (solo rate over its
// current rate; 1.0: as fast as alone); nullopt when either rate is unknown.
// Written to JSON as "slowdown" (derived: readers never send it back).
std::optional<double> slowdown(const QueueJob& job);

// One process on a GPU as the driver last listed it: MPS clients one by one.
struct ProcessView {
  int gpu = 0;
  uint32_t pid = 0;
  std::optional<int64_t> job;  // the service job it belongs to (its id)
  std::optional<uint64_t> used_memory_bytes;
  std::optional<double> sm_util_pct;  // absent for MPS clients (NVML reports the server)
  bool mps_client = false;
  std::string user;     // "" when unknown
  std::string command;  // the kernel's short name; "" when unknown
};

struct GpuView {
  int index = 0;
  std::string name;
  std::string uuid;
  uint64_t memory_total_bytes = 0;
  int jobs_running = 0;
  std::optional<DeviceSample> latest;
  std::optional<double> power_limit_w;  // the enforced power limit
};

struct RunView {
  int64_t id = 0;
  std::string state;
  UnixMillis started_ms = 0;
  std::optional<UnixMillis> ended_ms;
  std::string mechanism;
  std::string job_file;
  int job_count = 0;
};

// One owner's jobs not yet ended, counted over the whole queue, and the
// usage fair share orders the queue by (docs/serve.md).
struct OwnerJobs {
  int64_t queued = 0;
  int64_t running = 0;
  double usage_ms = 0;  // charged GPU time lately (decayed), in ms
  double weight = 1;    // their share of the GPUs against others' (--fair-share-weight)
  double total_ms = 0;  // charged GPU time in all, not decayed
};

// The queue is paged, so that what a reader costs does not grow with it:
// `jobs` holds every running job and one page of the queued ones (from the
// `queued_offset`-th in queue order), then recently ended ones;
// `queued_total` and `owners` count the whole queue.
struct ServiceSnapshot {
  UnixMillis time_ms = 0;
  ServiceInfo service;
  std::vector<GpuView> gpus;
  std::vector<QueueJob> jobs;  // running and one page of queued, in queue order; recently ended
  int64_t queued_total = 0;
  int64_t queued_offset = 0;
  // By owner name: those with jobs not yet ended, or usage the service keeps.
  std::map<std::string, OwnerJobs> owners;
  std::vector<DeviceSample> samples;   // recent device samples, oldest first
  std::vector<RunView> runs;           // recent runs, newest first
  std::vector<ProcessView> processes;  // per GPU, its latest process listing
};

nlohmann::json to_json(const QueueJob& job);
nlohmann::json to_json(const ProcessView& process);
nlohmann::json to_json(const GpuView& gpu);
nlohmann::json to_json(const RunView& run);
nlohmann::json to_json(const ServiceSnapshot& snapshot);
// A snapshot's "owners" object: per user, queued, running, usage_ms, weight, total_ms.
nlohmann::json owners_to_json(const std::map<std::string, OwnerJobs>& owners);
// `colo usage`'s "ended" rows (the socket's usage answer, /api/usage): per
// user, {"owner","jobs","failed","gpu_ms","solo_ms","share_ms","energy_j",
// "cancelled","rated_gpu_ms","rated_share_ms"} (ServiceUsageReport);
// `name_key` "group" for rows by group (colo usage --by group --json).
nlohmann::json usage_rows_to_json(const std::vector<ServiceUsageReport>& rows,
                                  const std::string& name_key = "owner");

Result<QueueJob> queue_job_from_json(const nlohmann::json& json);
Result<ServiceSnapshot> snapshot_from_json(const nlohmann::json& json);

// True for the states a job does not leave.
bool is_final_state(const std::string& state);

// `colo queue`: the service line, then per GPU its running jobs, then the
// queue, then recently ended jobs: ID, OWNER, STATE, MECH, EPOCH, RATE, END.
std::string format_queue(const ServiceSnapshot& snapshot, UnixMillis now_ms);
// A snapshot's "owners" object (an older service's may lack fields).
std::map<std::string, OwnerJobs> owners_from_json(const nlohmann::json& owners);
// What `colo usage` reports: per user (or per group, usage_by_group()),
// usage lately, weight and jobs (`owners`), and the jobs that ended in the
// span with their GPU time and solo-equivalent GPU time (`ended`).
struct UsageReport {
  std::map<std::string, OwnerJobs> owners;
  std::vector<ServiceUsageReport> ended;
  std::string by = "user";  // "user" or "group": what the names are
};
// The same figures summed per group: each user counted in the group
// `group_of` gives for them (colo usage: their primary group in the user
// database of the service's machine). Weights belong to users: a group's is
// 0, shown as "-". Ended jobs most GPU time first.
UsageReport usage_by_group(const UsageReport& by_user,
                           const std::function<std::string(const std::string&)>& group_of);
// `colo usage`: each owner's usage lately, weight and jobs, most used first;
// then, per owner, the jobs that ended `since` ("in the last 7d"), those
// cancelled after they started, their GPU time, solo-equivalent GPU time,
// collocation's speed-up and energy; the solo-equivalent figures of the time
// whose solo rate was known only, "-" where none was.
std::string format_usage(const UsageReport& report, const std::string& since);
// The same as CSV, one row per user (or group) of either (a header row
// first; the name quoted): user (or group), weight, usage_lately_ms,
// usage_total_ms, running, queued, ended_jobs, failed, gpu_ms, solo_ms,
// share_ms, energy_j, cancelled, rated_gpu_ms, rated_share_ms.
std::string usage_csv(const UsageReport& report);
// Energy for people: "850 J", "12.5 Wh", "3.20 kWh".
std::string format_energy(double joules);

}  // namespace colo
