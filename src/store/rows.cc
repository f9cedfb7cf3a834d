#include "store/rows.h"

#include "common/enum_names.h"

namespace colo {
namespace {

constexpr EnumNames<RunState, 5> kRunStateNames{"run state",
                                                {{
                                                    {RunState::kRunning, "running"},
                                                    {RunState::kOk, "ok"},
                                                    {RunState::kFailed, "failed"},
                                                    {RunState::kCancelled, "cancelled"},
                                                    {RunState::kInterrupted, "interrupted"},
                                                }}};

}  // namespace

std::string to_string(RunState state) { return kRunStateNames.name(state); }

Result<RunState> parse_run_state(std::string_view text) { return kRunStateNames.parse(text); }

std::map<std::string, std::string> changed_tags(std::map<std::string, std::string> tags,
                                                const std::map<std::string, std::string>& given) {
  for (const auto& [key, value] : given) {
    if (value.empty()) {
      tags.erase(key);
    } else {
      tags[key] = value;
    }
  }
  return tags;
}

namespace {

// A job's lifetime meets [from_ms, to_ms].
bool meets(const JobRow& job, UnixMillis from_ms, UnixMillis to_ms) {
  return job.started_ms && *job.started_ms <= to_ms && (!job.ended_ms || *job.ended_ms >= from_ms);
}

}  // namespace

Result<RunRow> RunReader::run_row(int64_t run_id) {
  Result<RunRecord> record = run_record(run_id, MetricSteps::kSkip, Samples::kSkip);
  if (!record.ok()) return record.error();
  return std::move(record->run);
}

Result<std::vector<JobRow>> RunReader::job_ends(int64_t run_id, int64_t after_id) {
  Result<RunRecord> record = run_record(run_id, MetricSteps::kSkip, Samples::kSkip);
  if (!record.ok()) return record.error();
  std::vector<JobRow> out;
  for (const JobRow& job : record->jobs) {
    if (job.id <= after_id) continue;
    JobRow end;
    end.id = job.id;
    end.state = job.state;
    end.device = job.device;
    end.started_ms = job.started_ms;
    end.ended_ms = job.ended_ms;
    out.push_back(std::move(end));
  }
  return out;
}

Result<RunRecord> RunReader::run_window(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms) {
  Result<RunRecord> record = run_record(run_id, MetricSteps::kSkip, Samples::kSkip);
  if (!record.ok()) return record.error();
  RunRecord out;
  out.run = std::move(record->run);
  out.devices = std::move(record->devices);
  for (size_t i = 0; i < record->jobs.size(); ++i) {
    if (!meets(record->jobs[i], from_ms, to_ms)) continue;
    out.jobs.push_back(std::move(record->jobs[i]));
    out.events.push_back(i < record->events.size() ? std::move(record->events[i])
                                                   : std::vector<ProgressEvent>{});
  }
  return out;
}

Status RunReader::for_each_sample_between(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms,
                                          SampleSink& sink) {
  class Between : public SampleSink {
   public:
    Between(SampleSink& to, UnixMillis from_ms, UnixMillis to_ms)
        : to_(to), from_ms_(from_ms), to_ms_(to_ms) {}
    void add(const DeviceSample& s) override {
      if (s.time_ms >= from_ms_ && s.time_ms <= to_ms_) to_.add(s);
    }
    void add(const ProcessSampleRow& r) override {
      if (r.sample.time_ms >= from_ms_ && r.sample.time_ms <= to_ms_) to_.add(r);
    }

   private:
    SampleSink& to_;
    UnixMillis from_ms_;
    UnixMillis to_ms_;
  } between(sink, from_ms, to_ms);
  return for_each_sample(run_id, between);
}

}  // namespace colo
