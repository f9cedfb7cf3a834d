// colo serve: the long-running owner of a machine's GPUs. Users submit jobs
// at any time over a Unix socket; the queue lives in the run store and
// survives the service's restarts; one RunEngine places and runs the jobs.
//
// run_service() runs the service over one RunSession (run/run_session.h: the
// clean-up after a dead colo, the GPUs taken and locked, the run recorded,
// the mechanism started; one close on every path out). What is its own: one
// service per store and per socket (claimed before the GPUs, so that
// clients can queue requests meanwhile), the HTTP address when one is asked
// for, the queue the store kept (attempts that a killed service left running
// are recorded interrupted and run again, per each job's restart policy),
// and the loop: answer requests, tick the engine, record what changed in the
// queue, publish the snapshot (the HTTP API answers from it on threads of its
// own); on SIGTERM stop (running jobs stopped and queued again for the next
// start) or drain (no new jobs start; the running ones finish), as the
// options say.
//
// Requests (one JSON object per line; see docs/serve.md): submit, queue,
// status, cancel, logs. The caller is who the kernel says (SO_PEERCRED); a
// user cancels and reads the logs of their own jobs only, root and the admin
// group any. A service running as root runs each job as its submitter (uid,
// groups, HOME), never as root on someone else's behalf; a service running
// as another user takes jobs from that user only.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "run/run_engine.h"
#include "run/run_session.h"
#include "serve/http_api.h"
#include "serve/process_identity.h"
#include "serve/protocol.h"
#include "serve/quota_book.h"
#include "serve/service_loaders.h"
#include "serve/snapshot.h"
#include "serve/unix_socket.h"
#include "serve/usage_ledger.h"
#include "sharing/mechanism.h"
#include "store/run_store.h"

namespace colo {

struct ServeOptions {
  std::vector<int> gpus;  // empty: every GPU
  // The Slurm allocation the service runs in: it uses only the allocation's GPUs.
  std::optional<SlurmAllocation> slurm;
  LockOptions locks;                  // how the GPUs are taken (waits by default)
  std::string socket_path;            // required
  std::optional<gid_t> socket_group;  // the socket's group (mode 0660); unset: the service's
  std::optional<gid_t> admin_group;   // its members may cancel anyone's jobs
  std::string logs_root;              // required: jobs/ (logs) and checkpoints/ go here
  EngineOptions engine;               // policy (auto by default), limits, sampling, grace
  int64_t tick_ms = 200;              // the loop's period (requests wake it earlier)
  bool drain_on_stop = false;         // SIGTERM drains instead of stopping
  int ended_jobs_shown = 20;          // recently ended jobs in the snapshot
  // How long a shared data loader may take to accept consumers; its readers
  // wait queued meanwhile, and fail with the reason after it.
  int64_t loader_ready_timeout_ms = 120'000;
  // false (--queue-order fcfs): the queue is first come, first served across
  // users (within priorities); usage is still accounted and reported.
  bool fair_share = true;
  // Fair share's half-life (--fair-share-half-life) and weights
  // (--fair-share-weight): serve/usage_ledger.h.
  UsageLedgerOptions usage;
  // Quotas (--max-jobs-per-user, --max-gpus-per-user, --max-gpus-for,
  // --max-jobs-for): serve/quota_book.h. Bounds on GPUs' worth need
  // engine.quotas.
  QuotaBounds quotas;
  using Quota = QuotaBound;
  // Some bound on GPUs' worth is set (the engine must hold jobs back).
  bool gpu_quotas() const { return quotas.bound_gpus(); }
  // Preemption: a queued job that has waited this long may stop one running
  // preemptible job of lower priority (RunEngine::preempt); one at a time,
  // the next only after it waited as long again. Unset: never.
  std::optional<int64_t> preempt_after_ms;
  // Sample retention: the service's samples older than samples_full_for_ms
  // are thinned to one per GPU (and process) every samples_thinned_to_ms
  // (RunStore::thin_samples); 0 keeps them all.
  int64_t samples_full_for_ms = 7 * 86'400'000LL;
  int64_t samples_thinned_to_ms = 60'000;
  std::optional<HttpOptions> http;  // the read-only HTTP API and /metrics; unset: off
  // Pages served beside the HTTP API (the dashboard, src/views), made from the
  // store's path once the service runs; unset: the API alone.
  std::function<PageRoutes(const std::string& store_path)> http_pages;
  std::string command_line;
  // Names the owner and command of each process on the GPUs in the snapshot
  // (the MPS server's among them, to which NVML gives its clients' SM use).
  ProcessDescriber describe_process = describe_process_from_proc;
};

struct ServeContext {
  Clock& clock;
  GpuBackend& backend;
  RunStore& store;
  Mechanism& mechanism;
  MechanismOptions mechanism_options;
  std::ostream& log;  // the service's log (stderr)
  // Incremented by the signal handlers (SIGTERM, SIGINT).
  const std::atomic<int>& stop_requests;
};

// Runs the service until it is stopped. Errors only when it could not start.
Status run_service(const ServeOptions& options, ServeContext& ctx);

// The service once its engine runs: the queue, requests, the snapshot.
// Everything but latest_snapshot() runs on the service's thread.
class Service {
 public:
  // `writer` is the run's: every change of a job's state goes through it.
  // `info` describes the service as submitters and the snapshot see it (its
  // policy: the engine's description of its scheduler).
  Service(ServeContext& ctx, const ServeOptions& options, RunEngine& engine, StoreWriter& writer,
          ServiceInfo info);

  // The queue the store kept (see the file comment).
  Status recover_queue();

  // Answers one request line with one answer line (JSON both).
  std::string answer(const Caller& caller, const std::string& request_line);
  nlohmann::json handle(const Caller& caller, const nlohmann::json& request);

  // Records in the store what the last engine ticks changed about jobs.
  void record_changes();

  // "running", "drained" (an admin's `colo drain`: no queued job starts until
  // `colo undrain`; submissions still queue), "draining" (--on-sigterm drain:
  // no new job, and the service stops once none runs), "stopping".
  void set_state(const std::string& state) {
    info_.state = state;
    queue_cache_.reset();
  }
  // The store's file was deleted or replaced under the service (`why`): it
  // takes no new work and starts no queued job, says so loudly, and writes
  // the queue it knows to a file beside the logs, so that nothing is lost
  // silently. Running jobs run on.
  void halt(const std::string& why);
  bool halted() const { return !halt_.reason.empty(); }
  // Where halt() wrote the queue; empty before.
  const std::string& lost_queue_path() const { return halt_.lost_queue_path; }
  // Where the HTTP API listens, for the snapshot ("" when it is off).
  void set_http_address(const std::string& address) { info_.http = address; }
  const std::string& state() const { return info_.state; }

  // The snapshot with one page of queued jobs (protocol.h: kQueuedPage);
  // counts cover the whole queue.
  // `samples`: with the GPUs' recent samples (the history `colo top` draws);
  // each GPU's latest is there either way.
  ServiceSnapshot snapshot(int64_t queued_offset = 0, int64_t queued_limit = protocol::kQueuedPage,
                           bool samples = true);
  std::vector<DeviceSample> recent_samples() const;  // every GPU's, oldest first
  // Builds the snapshot and makes it the one latest_snapshot() returns.
  void publish();
  // Preemption, once a second (options_.preempt_after_ms): lets the job
  // preempted for start first, then picks the next waiting job and its
  // victim (docs/serve.md, Preemption).
  void preempt_for_waiting();
  // Fair share, once a second: adds each running job's charged GPU time
  // since the last call to its owner's usage, decays it, and hands it
  // over the owner's weight to the engine, which orders the queue by it
  // (docs/serve.md). Keeps it in the store every kUsageKeptEveryMs.
  void account_usage();
  // Every 10 minutes, with --keep-checkpoints above 0: removes the
  // checkpoint directories of jobs that ended ok longer ago than that (with
  // 0 the engine removes them as the jobs end).
  void sweep_checkpoints();
  // The usage a service before this one kept, decayed over the time since;
  // and keeping this one's (also as the service stops).
  Status load_usage();
  Status keep_usage();
  static constexpr int64_t kUsageKeptEveryMs = 10'000;
  // The last published snapshot; safe from any thread (HTTP readers).
  std::shared_ptr<const ServiceSnapshot> latest_snapshot() const;

 private:
  // A job handed to the engine: the link between the service's queue and
  // the engine's key, and what the service decides by.
  struct Tracked {
    size_t key = 0;
    RestartPolicy restart = RestartPolicy::kOnFailure;
    int attempts_before = 0;  // attempts recorded before this service process took it
    uid_t owner = 0;
    // While it runs: the time (wall) up to which its usage is counted.
    std::optional<UnixMillis> accounted_to_ms;
    // Preemption: its priority, whether it may be stopped for a higher one,
    // since when it waits (wall; handed over, requeued, or last preempted
    // for), and when its attempt started.
    int priority = 0;
    bool preemptible = false;
    int gpus = 1;  // GPUs it needs at once (a gang: more)
    QosClass qos = QosClass::kNormal;
    UnixMillis waiting_since_ms = 0;
    UnixMillis started_ms = 0;
    // This attempt's usage so far, written to the store as it ends.
    ServiceJobUsage attempt;
  };

  nlohmann::json submit(const Caller& caller, const nlohmann::json& request);
  // The jobs a submit request sent, checked: an error says what is wrong
  // with the request or which job, and why.
  Result<std::vector<JobSpec>> submitted_specs(const Caller& caller,
                                               const nlohmann::json& request) const;
  // `colo submit --resume SUB`: the jobs of submission `which` (its id, RUN/ID
  // or name) that ended neither ok nor stopped early, as stored, to be queued
  // again each with its earlier checkpoint directory (moved to the new job's).
  // A job is resumed once (ServiceJobRow::resumed_by). An error when the
  // caller neither submitted it nor is an admin, when a job of it has not
  // ended, when none is left to run, or when a job's stored environment lost
  // a secret value.
  struct Resumption {
    std::string of;  // the submission, as RUN/ID
    // Its submitter, whose jobs the resumed ones stay, whoever resumes them.
    uid_t owner_uid = 0;
    std::string owner_name;
    std::string job_file;
    int64_t submission_id = 0;  // the submission resumed
    RunLabel label;             // its name and tags (not its note), carried over
    std::vector<JobSpec> specs;
    std::vector<int64_t> from;  // the service job each of `specs` resumes
    int64_t ended_well = 0;     // its jobs not run again
  };
  Result<Resumption> resumable(const Caller& caller, const std::string& which);
  nlohmann::json status(const nlohmann::json& request);
  nlohmann::json cancel(const Caller& caller, const nlohmann::json& request);
  // `colo cancel RUN/SUB` or NAME (common/target_syntax.h; a name among the
  // caller's own submissions): the submission's jobs not yet ended, in id
  // order. An error names `which` and says what is wrong.
  Result<std::vector<int64_t>> open_jobs_of_submission(const Caller& caller,
                                                       const std::string& which);
  nlohmann::json logs(const Caller& caller, const nlohmann::json& request);
  nlohmann::json usage_answer(const nlohmann::json& request);
  // `colo drain` / `colo undrain` (protocol::drain_request): admins only.
  nlohmann::json drain(const Caller& caller, const nlohmann::json& request);
  // `colo gc` of this service's store (protocol::gc_request): admins only.
  nlohmann::json gc(const Caller& caller, const nlohmann::json& request);
  static constexpr int kGcJobsPerRequest = 2000;
  // The answer to "queue" (optional "offset" and "limit" page the queued
  // jobs): the first page is rebuilt when the queue changed or it is older
  // than kQueueAnswerMaxAgeMs, so that many clients polling cost one snapshot.
  nlohmann::json queue_answer(const nlohmann::json& request);
  // A job's secret environment values, kept out of the store (see submit()).
  std::string secrets_path(int64_t id) const;
  // Hands a queued job to the engine, its secret values (`secrets`: "env"
  // and "job_env", as submit() keeps them) put back; an error ends it failed.
  void admit(const ServiceJobRow& row, const JobSpec& spec, const nlohmann::json& secrets);
  // The job goes to the engine's queue (already counted in quotas_).
  void hand_to_engine(HeldJob held);
  // Ends a job held for its loader as cancelled; false when it is not held.
  bool cancel_held(int64_t id, const std::string& reason);
  // Records a job's end and forgets its secret values.
  void record_end(int64_t id, JobState state, const std::string& reason, UnixMillis time_ms);
  bool is_admin(const Caller& caller) const;
  QueueJob queue_job(const ServiceJobRow& row) const;
  // The environment a job starts from (its stored one with its secret
  // values), one map for the jobs that share it: a sweep's points share
  // their submission's. Expired entries go as new ones come.
  std::shared_ptr<const std::map<std::string, std::string>> submitted_env(
      const std::string& env_json, const nlohmann::json& secret_env);

  // Fair share: adds the running job's charged GPU time since it was last
  // counted, up to `until_ms`, to its owner's usage (account_usage, and as
  // it ends or is requeued: a job shorter than a second counts too).
  // `shares`: each GPU's jobs' charged shares (charged_shares_by_gpu()).
  using GpuShares = std::map<int, std::map<size_t, double>>;
  void account_run_until(size_t key, UnixMillis until_ms, const GpuShares& shares);
  // The last span of a job that ended or was requeued (`end_ms`).
  void account_last_span(size_t key, UnixMillis end_ms);
  // What each running job (and `ended`, a job that ended just now, where it
  // ran) is charged of each of its GPUs: serve/usage_ledger.h over what the
  // sampler last measured of its processes and what it last reported.
  GpuShares charged_shares_by_gpu(std::optional<size_t> ended = std::nullopt) const;
  // Energy, in account_usage(): each pair of a GPU's samples newer than the
  // last counted, split evenly among the jobs running there now (a job that
  // ended since the last call has its energy to that call; a pair at most a
  // second old goes to whoever runs there now).
  void account_energy(const std::map<int, int>& on_gpu);
  std::map<int, int> running_per_gpu() const;
  // Each owner's share of the GPUs now, and what is left of their quota,
  // handed to the engine (options_.gpu_quotas(); QuotaBook).
  void update_quotas();

  // The cached first page, made again where it is stale.
  const ServiceSnapshot& first_page_snapshot();
  const nlohmann::json& first_queue_page();

  // What the service was given.
  ServeContext& ctx_;
  const ServeOptions& options_;
  RunEngine& engine_;
  StoreWriter& writer_;
  ServiceInfo info_;

  // The queue: the one mapping between the service's jobs and the engine's keys.
  std::map<int64_t, Tracked> tracked_;  // service job id -> engine job
  std::map<size_t, int64_t> by_key_;    // engine key -> service job id
  QuotaBook quotas_;                    // each owner's jobs not yet ended, and their room
  UsageLedger usage_;                   // fair share
  ServiceLoaders loaders_;              // the shared data loaders of submitted jobs
  std::map<std::string, std::weak_ptr<const std::map<std::string, std::string>>> envs_;
  // The job a victim was preempted for, while the victim waits parked in the
  // engine, and when.
  struct Preempting {
    std::optional<int64_t> for_id;
    UnixMillis at_ms = 0;
  };
  Preempting preempting_;
  // The end time up to which sweep_checkpoints() has looked (wall).
  UnixMillis checkpoints_swept_to_ms_ = 0;
  // Why the service halted (halt()), and where it wrote the queue; empty before.
  struct Halt {
    std::string reason;
    std::string lost_queue_path;
  };
  Halt halt_;

  // What the engine last knew of the jobs that ended in this service process
  // (their run, last epoch, rate and peak GPU memory), which the snapshot
  // shows with them once they are no longer tracked: the latest
  // kEndedViewsKept ends, oldest first in `order`.
  static constexpr size_t kEndedViewsKept = 1000;
  struct EndedViews {
    std::map<int64_t, EngineJobView> views;  // service job id -> its last view
    std::deque<int64_t> order;
  };
  EndedViews ended_;
  // The jobs whose end is queued in the writer but not yet in the store
  // (service job id -> the number of its end write, StoreWriter::last_queued):
  // the status answer says they are being recorded, and why that waits when
  // the store cannot be written. Pruned as the writer writes.
  std::map<int64_t, uint64_t> ends_unwritten_;
  void forget_written_ends();
  // The queue's first page, which most requests ask for (colo queue, colo
  // top): made at most every kQueueAnswerMaxAgeMs and after every change;
  // each form of its answer made once, when first asked for.
  struct QueueAnswerCache {
    std::optional<ServiceSnapshot> snapshot;  // without samples
    std::optional<nlohmann::json> answer;     // {"ok", "snapshot"}
    std::string text;                         // `answer` dumped
    std::string table;                        // {"ok", "table"} dumped
    int64_t made_ms = 0;                      // monotonic
    void reset() { *this = QueueAnswerCache(); }
  };
  QueueAnswerCache queue_cache_;
  mutable std::mutex latest_mu_;
  std::shared_ptr<const ServiceSnapshot> latest_;  // guarded by latest_mu_
};

}  // namespace colo
