#include "store/store_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "common/units.h"

namespace colo {

StoreWriter::StoreWriter(RunStore& store, Clock& clock, StoreWriterOptions options)
    : store_(store), clock_(clock), options_(options) {}

void StoreWriter::job_started(int64_t job_id, pid_t pid, int device, UnixMillis started_ms,
                              int attempt) {
  push(JobStarted{job_id, pid, device, started_ms, attempt});
}
void StoreWriter::job_requeued(int64_t job_id, std::string log_path, std::string reason,
                               UnixMillis ended_ms) {
  push(JobRequeued{job_id, std::move(log_path), std::move(reason), ended_ms});
}
void StoreWriter::job_instance(int64_t job_id, std::string instance) {
  push(JobInstance{job_id, std::move(instance)});
}
void StoreWriter::job_gpus(int64_t job_id, std::string gpus) {
  push(JobGpus{job_id, std::move(gpus)});
}
void StoreWriter::job_finished(int64_t job_id, JobExit exit, UnixMillis ended_ms,
                               int64_t malformed_progress_lines) {
  push(JobFinished{job_id, std::move(exit), ended_ms, malformed_progress_lines});
}
void StoreWriter::service_job_started(int64_t id, int64_t job_id, int device, UnixMillis started_ms,
                                      std::string log_path) {
  push(ServiceJobChange{ServiceJobChange::Kind::kStarted, id, job_id, device, started_ms,
                        std::move(log_path)});
}
void StoreWriter::service_job_requeued(int64_t id, std::string reason, bool counted) {
  ServiceJobChange c{ServiceJobChange::Kind::kRequeued, id};
  c.reason = std::move(reason);
  c.counted = counted;
  push(std::move(c));
}
void StoreWriter::service_job_ended(int64_t id, JobState state, std::string reason,
                                    UnixMillis ended_ms) {
  ServiceJobChange c{ServiceJobChange::Kind::kEnded, id};
  c.state = state;
  c.reason = std::move(reason);
  c.time_ms = ended_ms;
  push(std::move(c));
}
void StoreWriter::service_job_usage(int64_t id, const ServiceJobUsage& usage) {
  ServiceJobChange c{ServiceJobChange::Kind::kUsage, id};
  c.usage = usage;
  push(std::move(c));
}
void StoreWriter::end_run(int64_t run_id, RunState state, UnixMillis ended_ms) {
  push(RunEnded{run_id, state, ended_ms});
}
void StoreWriter::add_job_events(std::vector<std::pair<int64_t, ProgressEvent>> events) {
  const size_t chunk = std::max<size_t>(1, options_.max_rows_per_write);
  if (events.size() <= chunk) {
    if (!events.empty()) push(Events{std::move(events)});
    return;
  }
  for (size_t from = 0; from < events.size(); from += chunk) {
    const auto first = events.begin() + static_cast<std::ptrdiff_t>(from);
    const auto last =
        events.begin() + static_cast<std::ptrdiff_t>(std::min(from + chunk, events.size()));
    push(Events{{std::make_move_iterator(first), std::make_move_iterator(last)}});
  }
}
void StoreWriter::add_samples(int64_t run_id, std::vector<DeviceSample> devices,
                              std::vector<ProcessSampleRow> processes) {
  if (!devices.empty() || !processes.empty())
    push(Samples{run_id, std::move(devices), std::move(processes)});
}

void StoreWriter::add_data_loader(int64_t run_id, DataLoaderRow loader) {
  push(DataLoader{run_id, std::move(loader)});
}

Result<std::vector<int64_t>> StoreWriter::add_jobs(int64_t run_id, const std::vector<JobSpec>& jobs,
                                                   const std::vector<std::string>& log_paths,
                                                   UnixMillis queued_ms, int64_t wait_ms,
                                                   const std::vector<int64_t>& resumes_jobs) {
  ScopedBusyTimeout busy(store_, options_.busy_timeout_ms);
  return retry_transient(clock_, wait_ms, [&] {
    return store_.add_jobs(run_id, jobs, log_paths, queued_ms, resumes_jobs);
  });
}

void StoreWriter::push(Write write) {
  queued_rows_ += rows(write);
  queue_.push_back(Queued{++last_queued_, std::move(write)});
}

size_t StoreWriter::rows(const Write& write) {
  if (const auto* e = std::get_if<Events>(&write)) return e->events.size();
  if (const auto* s = std::get_if<Samples>(&write)) return s->devices.size() + s->processes.size();
  return 0;
}

std::string StoreWriter::describe(const Write& write) {
  return std::visit(
      [](const auto& w) -> std::string {
        using T = std::decay_t<decltype(w)>;
        if constexpr (std::is_same_v<T, JobStarted>) {
          return fmt::format("the start of job #{}", w.job_id);
        } else if constexpr (std::is_same_v<T, JobRequeued>) {
          return fmt::format("the retry of job #{}", w.job_id);
        } else if constexpr (std::is_same_v<T, JobInstance>) {
          return fmt::format("the MIG instance of job #{}", w.job_id);
        } else if constexpr (std::is_same_v<T, JobGpus>) {
          return fmt::format("the GPUs of gang #{}", w.job_id);
        } else if constexpr (std::is_same_v<T, JobFinished>) {
          return fmt::format("the end of job #{} ({}: {})", w.job_id, to_string(w.exit.state),
                             w.exit.reason);
        } else if constexpr (std::is_same_v<T, RunEnded>) {
          return fmt::format("the end of run {} ({})", w.run_id, to_string(w.state));
        } else if constexpr (std::is_same_v<T, Events>) {
          return fmt::format("{} progress events", w.events.size());
        } else if constexpr (std::is_same_v<T, DataLoader>) {
          return fmt::format("the data loader '{}' of run {}", w.loader.name, w.run_id);
        } else if constexpr (std::is_same_v<T, ServiceJobChange>) {
          switch (w.kind) {
            case ServiceJobChange::Kind::kStarted:
              return fmt::format("the start of service job {}", w.id);
            case ServiceJobChange::Kind::kRequeued:
              return fmt::format("the retry of service job {}", w.id);
            case ServiceJobChange::Kind::kEnded:
              return fmt::format("the end of service job {} ({}: {})", w.id, to_string(w.state),
                                 w.reason);
            case ServiceJobChange::Kind::kUsage:
              return fmt::format("the usage of service job {}", w.id);
          }
          return "";
        } else {
          return fmt::format("{} GPU samples", w.devices.size() + w.processes.size());
        }
      },
      write);
}

Status StoreWriter::apply(const Write& write) {
  return std::visit(
      [&](const auto& w) -> Status {
        using T = std::decay_t<decltype(w)>;
        if constexpr (std::is_same_v<T, JobStarted>) {
          return store_.job_started(w.job_id, w.pid, w.device, w.started_ms, w.attempt);
        } else if constexpr (std::is_same_v<T, JobRequeued>) {
          return store_.job_requeued(w.job_id, w.log_path, w.reason, w.ended_ms);
        } else if constexpr (std::is_same_v<T, JobInstance>) {
          return store_.job_instance(w.job_id, w.instance);
        } else if constexpr (std::is_same_v<T, JobGpus>) {
          return store_.job_gpus(w.job_id, w.gpus);
        } else if constexpr (std::is_same_v<T, JobFinished>) {
          return store_.job_finished(w.job_id, w.exit, w.ended_ms, w.malformed);
        } else if constexpr (std::is_same_v<T, RunEnded>) {
          return store_.end_run(w.run_id, w.state, w.ended_ms);
        } else if constexpr (std::is_same_v<T, Events>) {
          return store_.add_job_events(w.events);
        } else if constexpr (std::is_same_v<T, DataLoader>) {
          return store_.add_data_loader(w.run_id, w.loader);
        } else if constexpr (std::is_same_v<T, ServiceJobChange>) {
          switch (w.kind) {
            case ServiceJobChange::Kind::kStarted:
              return store_.service_job_started(w.id, w.job_id, w.device, w.time_ms, w.log_path);
            case ServiceJobChange::Kind::kRequeued:
              return store_.service_job_requeued(w.id, w.reason, w.counted);
            case ServiceJobChange::Kind::kEnded:
              return store_.service_job_ended(w.id, w.state, w.reason, w.time_ms);
            case ServiceJobChange::Kind::kUsage:
              return store_.add_service_job_usage(w.id, w.usage);
          }
          return OkStatus();
        } else {
          return store_.add_samples(w.run_id, w.devices, w.processes);
        }
      },
      write);
}

void StoreWriter::drop_oldest_rows(Write& write, size_t n) {
  auto drop_front = [&n](auto& rows) {
    const size_t k = std::min(n, rows.size());
    rows.erase(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(k));
    n -= k;
  };
  if (auto* e = std::get_if<Events>(&write)) drop_front(e->events);
  if (auto* s = std::get_if<Samples>(&write)) {
    drop_front(s->devices);
    drop_front(s->processes);
  }
}

size_t StoreWriter::drop_oldest_steps(Write& write, size_t n) {
  auto* e = std::get_if<Events>(&write);
  if (e == nullptr) return 0;
  size_t dropped = 0;
  std::erase_if(e->events, [&](const std::pair<int64_t, ProgressEvent>& event) {
    if (dropped == n || event.second.kind == "epoch_end") return false;
    ++dropped;
    return true;
  });
  return dropped;
}

void StoreWriter::enforce_bound(std::vector<std::string>& lines) {
  // Oldest GPU samples first, then the oldest steps, then the oldest epoch ends.
  enum class Pass { kSamples, kSteps, kEvents };
  for (Pass pass : {Pass::kSamples, Pass::kSteps, Pass::kEvents}) {
    for (auto it = queue_.begin(); it != queue_.end() && queued_rows_ > options_.max_queued_rows;) {
      Write& write = it->write;
      const bool match = pass == Pass::kSamples ? std::holds_alternative<Samples>(write)
                                                : std::holds_alternative<Events>(write);
      if (!match) {
        ++it;
        continue;
      }
      const size_t excess = queued_rows_ - options_.max_queued_rows;
      size_t n = 0;
      if (pass == Pass::kSteps) {
        n = drop_oldest_steps(write, excess);
      } else {
        n = std::min(rows(write), excess);
        drop_oldest_rows(write, n);
      }
      queued_rows_ -= n;
      (pass == Pass::kSamples ? dropped_samples_ : dropped_events_) += static_cast<int64_t>(n);
      if (rows(write) == 0) {
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  }
  const int64_t dropped = dropped_samples_ + dropped_events_;
  if (dropped > dropped_said_) {
    lines.push_back(fmt::format(
        "warning: store: {} GPU samples and {} progress events dropped so far: more than {} "
        "rows waited to be written (the store is locked, full, or slower than the jobs' output)",
        dropped_samples_, dropped_events_, options_.max_queued_rows));
    dropped_said_ = dropped;
  }
}

std::vector<std::string> StoreWriter::flush() {
  std::vector<std::string> lines;
  const int64_t now = clock_.monotonic_ms();
  if (failing_since_ms_ && now < retry_at_ms_) {
    enforce_bound(lines);
    return lines;
  }
  ScopedBusyTimeout busy(store_, options_.busy_timeout_ms);
  while (!queue_.empty()) {
    if (clock_.monotonic_ms() - now >= options_.max_flush_ms) {
      enforce_bound(lines);
      return lines;
    }
    const Write& front = queue_.front().write;
    Status status = apply(front);
    if (!status.ok() && status.error().transient()) {
      if (!failing_since_ms_) {
        failing_since_ms_ = now;
        backoff_ms_ = options_.first_backoff_ms;
        written_in_episode_ = 0;
        lines.push_back(fmt::format(
            "warning: store: cannot write {} now ({}); keeping it and what follows in memory, "
            "and trying again",
            describe(front), status.error().message()));
      } else {
        backoff_ms_ = std::min(backoff_ms_ * 2, options_.max_backoff_ms);
      }
      failing_why_ = status.error().message();
      retry_at_ms_ = clock_.monotonic_ms() + backoff_ms_;
      enforce_bound(lines);
      return lines;
    }
    if (!status.ok()) {
      lines.push_back(fmt::format("warning: store: could not write {}: {}", describe(front),
                                  status.error().message()));
    }
    queued_rows_ -= rows(front);
    queue_.pop_front();
    ++written_in_episode_;
  }
  if (failing_since_ms_) {
    lines.push_back(fmt::format("store: writable again after {}; {} queued writes made",
                                format_duration_ms(clock_.monotonic_ms() - *failing_since_ms_),
                                written_in_episode_));
    failing_since_ms_.reset();
  }
  return lines;
}

uint64_t StoreWriter::written_through() const {
  return queue_.empty() ? last_queued_ : queue_.front().seq - 1;
}

std::optional<std::string> StoreWriter::trouble() const {
  if (!failing_since_ms_) return std::nullopt;
  return fmt::format("cannot write the store for {} now: {}",
                     format_duration_ms(clock_.monotonic_ms() - *failing_since_ms_), failing_why_);
}

Status StoreWriter::drain(int64_t timeout_ms, const std::function<void(const std::string&)>& say) {
  const int64_t deadline = clock_.monotonic_ms() + timeout_ms;
  while (true) {
    for (const std::string& line : flush()) say(line);
    if (queue_.empty()) return OkStatus();
    const int64_t now = clock_.monotonic_ms();
    if (now >= deadline) break;
    clock_.sleep_for_ms(std::clamp<int64_t>(retry_at_ms_ - now, 1, deadline - now));
  }
  std::string lost;
  int64_t rows_lost = 0;
  for (const Queued& q : queue_) {
    if (rows(q.write) > 0) {
      rows_lost += static_cast<int64_t>(rows(q.write));
    } else {
      lost += "\n  " + describe(q.write);
    }
  }
  return Error(fmt::format(
      "{}: could not record, after trying for {}: {} sample and event rows{}; the store keeps "
      "what it had before (the run will read 'interrupted')",
      store_.path(), format_duration_ms(timeout_ms), rows_lost, lost));
}

}  // namespace colo
