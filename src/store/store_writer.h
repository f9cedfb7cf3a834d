// StoreWriter: what a run writes to its RunStore while it runs, queued in
// memory and written in order, so that a store locked by another colo or on a
// full disk delays a write but never loses a job's state.
//
// Each call queues one write (carrying the time the event happened, never the
// time it is written); flush() writes the queue oldest first, each write in
// its own transaction. A transient failure (locked, busy, disk full, I/O)
// stops the flush: that write and the rest stay queued and are tried again
// after a backoff that doubles up to max_backoff_ms. Writes wait only briefly
// for a lock (busy_timeout_ms), so the run loop is never held up for long. A
// permanent failure (a bug) drops that one write and says so.
//
// Memory is bounded: samples and progress events waiting beyond
// max_queued_rows are dropped, counted and said: oldest GPU samples first,
// then the oldest progress events other than epoch ends (steps), and epoch
// ends only when nothing else is left to drop. State transitions (a job
// started, retried, ended; the run ended) are never dropped.
//
// Progress events are written at most max_rows_per_write to a transaction,
// so that one colo's flood never holds the store's lock for long against the
// other colos writing to it.
//
// Threading: not thread-safe; the run engine's thread owns it. Borrows the
// store and the clock.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "store/run_store.h"

namespace colo {

struct StoreWriterOptions {
  // How long one write waits for another process's lock before it is left
  // queued for later.
  int busy_timeout_ms = 200;
  // The wait before the first retry after a failure; doubles up to the max.
  int64_t first_backoff_ms = 100;
  int64_t max_backoff_ms = 2000;
  // Sample and progress-event rows kept while the store cannot be written.
  size_t max_queued_rows = 200'000;
  // Progress events per transaction.
  size_t max_rows_per_write = 2000;
  // One flush() writes for about this long at most, then leaves the rest for
  // the next (the run loop has jobs to watch; other colos want the lock).
  int64_t max_flush_ms = 250;
};

class StoreWriter {
 public:
  StoreWriter(RunStore& store, Clock& clock, StoreWriterOptions options = {});
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  // Each queues one write; nothing reaches the store before flush().
  // See RunStore::job_started and job_requeued.
  void job_started(int64_t job_id, pid_t pid, int device, UnixMillis started_ms, int attempt = 1);
  void job_requeued(int64_t job_id, std::string log_path, std::string reason, UnixMillis ended_ms);
  void job_instance(int64_t job_id, std::string instance);
  void job_gpus(int64_t job_id, std::string gpus);
  void job_finished(int64_t job_id, JobExit exit, UnixMillis ended_ms,
                    int64_t malformed_progress_lines);
  void end_run(int64_t run_id, RunState state, UnixMillis ended_ms);
  void add_job_events(std::vector<std::pair<int64_t, ProgressEvent>> events);
  void add_samples(int64_t run_id, std::vector<DeviceSample> devices,
                   std::vector<ProcessSampleRow> processes);
  // See RunStore::add_data_loader.
  void add_data_loader(int64_t run_id, DataLoaderRow loader);
  // The service's queue (colo serve); see RunStore::service_job_started,
  // service_job_requeued and service_job_ended.
  void service_job_started(int64_t id, int64_t job_id, int device, UnixMillis started_ms,
                           std::string log_path);
  void service_job_requeued(int64_t id, std::string reason, bool counted = true);
  void service_job_ended(int64_t id, JobState state, std::string reason, UnixMillis ended_ms);
  // See RunStore::add_service_job_usage.
  void service_job_usage(int64_t id, const ServiceJobUsage& usage);

  // Adds the jobs' rows at once, not queued (their ids are needed now); a
  // store that cannot be written is waited out for up to `wait_ms`. See
  // RunStore::add_jobs.
  Result<std::vector<int64_t>> add_jobs(int64_t run_id, const std::vector<JobSpec>& jobs,
                                        const std::vector<std::string>& log_paths,
                                        UnixMillis queued_ms, int64_t wait_ms = 0,
                                        const std::vector<int64_t>& resumes_jobs = {});

  // Writes what is queued (for max_flush_ms at most), unless the backoff
  // after a failure is still running. Returns lines for people: the first failure of an episode,
  // what was dropped, and the recovery ("writable again after 7.1s").
  std::vector<std::string> flush();

  // Flushes, waiting out backoffs, until nothing is queued or `timeout_ms`
  // has passed. `say` gets each line flush() returns. The error lists the
  // writes that could not be made (a state transition is named).
  Status drain(int64_t timeout_ms, const std::function<void(const std::string&)>& say);

  // Writes are numbered in the order they are queued, from 1: last_queued()
  // is the latest's number (0: none yet); every write up to written_through()
  // has been made (or, a permanent failure, given up), so that a caller that
  // noted last_queued() after queueing a write knows when it is in the store.
  uint64_t last_queued() const { return last_queued_; }
  uint64_t written_through() const;
  // While writes fail for a transient reason (a lock another process holds,
  // a full disk): for how long, and the last error, which names the store
  // ("cannot write the store for 7.1s now: /x/colo.db: ... database is
  // locked ..."); unset while writes succeed.
  std::optional<std::string> trouble() const;

  size_t queued() const { return queue_.size(); }
  size_t queued_rows() const { return queued_rows_; }
  int64_t dropped_samples() const { return dropped_samples_; }
  int64_t dropped_events() const { return dropped_events_; }

 private:
  struct JobStarted {
    int64_t job_id;
    pid_t pid;
    int device;
    UnixMillis started_ms;
    int attempt;
  };
  struct JobRequeued {
    int64_t job_id;
    std::string log_path;
    std::string reason;
    UnixMillis ended_ms;
  };
  struct JobInstance {
    int64_t job_id;
    std::string instance;
  };
  struct JobGpus {
    int64_t job_id;
    std::string gpus;
  };
  struct JobFinished {
    int64_t job_id;
    JobExit exit;
    UnixMillis ended_ms;
    int64_t malformed;
  };
  struct RunEnded {
    int64_t run_id;
    RunState state;
    UnixMillis ended_ms;
  };
  struct Events {
    std::vector<std::pair<int64_t, ProgressEvent>> events;
  };
  struct DataLoader {
    int64_t run_id;
    DataLoaderRow loader;
  };
  struct Samples {
    int64_t run_id;
    std::vector<DeviceSample> devices;
    std::vector<ProcessSampleRow> processes;
  };
  struct ServiceJobChange {
    enum class Kind { kStarted, kRequeued, kEnded, kUsage } kind;
    int64_t id;
    int64_t job_id = 0;  // kStarted
    int device = 0;      // kStarted
    UnixMillis time_ms = 0;
    std::string log_path;                // kStarted
    JobState state = JobState::kQueued;  // kEnded
    std::string reason;                  // kRequeued, kEnded
    bool counted = true;                 // kRequeued
    ServiceJobUsage usage;               // kUsage
  };
  using Write = std::variant<JobStarted, JobRequeued, JobInstance, JobGpus, JobFinished, RunEnded,
                             Events, Samples, DataLoader, ServiceJobChange>;

  Status apply(const Write& write);
  static std::string describe(const Write& write);
  static size_t rows(const Write& write);
  void push(Write write);
  static void drop_oldest_rows(Write& write, size_t n);
  // Drops up to `n` of the oldest events of `write` that are not epoch ends;
  // returns how many it dropped.
  static size_t drop_oldest_steps(Write& write, size_t n);
  void enforce_bound(std::vector<std::string>& lines);

  RunStore& store_;
  Clock& clock_;
  StoreWriterOptions options_;
  struct Queued {
    uint64_t seq;
    Write write;
  };
  std::deque<Queued> queue_;
  uint64_t last_queued_ = 0;
  size_t queued_rows_ = 0;
  // The current episode of failures: since when, the next try, the backoff.
  std::optional<int64_t> failing_since_ms_;  // monotonic
  int64_t retry_at_ms_ = 0;
  int64_t backoff_ms_ = 0;
  int64_t written_in_episode_ = 0;
  std::string failing_why_;  // the episode's last error
  int64_t dropped_samples_ = 0;
  int64_t dropped_events_ = 0;
  int64_t dropped_said_ = 0;  // dropped rows already reported
};

// Calls `write` (returning a Result or Status) until it succeeds, fails for
// good, or `timeout_ms` has passed, sleeping with a doubling backoff between
// tries: for the writes whose result is needed at once (a new run's id).
template <class Write>
auto retry_transient(Clock& clock, int64_t timeout_ms, Write write) -> decltype(write()) {
  const int64_t deadline = clock.monotonic_ms() + timeout_ms;
  int64_t backoff_ms = 100;
  while (true) {
    auto result = write();
    if (result.ok() || !result.error().transient() || clock.monotonic_ms() >= deadline)
      return result;
    clock.sleep_for_ms(backoff_ms);
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 2000);
  }
}

}  // namespace colo
