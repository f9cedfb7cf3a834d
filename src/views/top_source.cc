#include "views/top_source.h"

#include <fmt/format.h>
#include <unistd.h>

#include "common/names.h"
#include "serve/protocol.h"

namespace colo {

using nlohmann::json;

TopInput ServiceTopSource::read() {
  Result<json> answer = client_.call(protocol::queue_request());
  Result<ServiceSnapshot> snapshot = answer.ok() ? snapshot_from_json((*answer)["snapshot"])
                                                 : Result<ServiceSnapshot>(answer.error());
  if (!snapshot.ok()) {
    last_.error = "colo serve at " + client_.path() + ": " + snapshot.error().message();
    return last_;
  }
  last_.snapshot = std::move(snapshot).value();
  last_.from_service = true;
  last_.source = "colo serve at " + client_.path();
  last_.error.clear();
  return last_;
}

Status ServiceTopSource::cancel(int64_t id) {
  Result<json> answer = client_.call(protocol::cancel_request({id}));
  if (!answer.ok()) return answer.error();
  for (const json& r : (*answer)["results"]) {
    if (!r.value("ok", false)) return Error(r.value("error", "colo serve refused"));
  }
  return OkStatus();
}

Result<LogChunk> ServiceTopSource::read_log(int64_t id, uint64_t offset) {
  Result<json> answer = client_.call(protocol::logs_request(id, offset));
  if (!answer.ok()) return answer.error();
  LogChunk chunk;
  chunk.path = answer->value("path", "");
  chunk.data = answer->value("data", "");
  chunk.next_offset = answer->value("offset", offset);
  chunk.ended = answer->value("ended", false);
  return chunk;
}

LocalTopSource::LocalTopSource(GpuBackend& backend, std::vector<DeviceInfo> devices, Clock& clock,
                               ProcessDescriber describe, size_t history)
    : backend_(backend),
      devices_(std::move(devices)),
      clock_(clock),
      describe_(std::move(describe)),
      history_(history),
      started_ms_(clock.now_ms()) {}

TopInput LocalTopSource::read() {
  TopInput input;
  input.from_service = false;
  input.source = fmt::format("local GPUs ({})", backend_.version());
  ServiceSnapshot& s = input.snapshot;
  s.time_ms = clock_.now_ms();
  s.service.host = host_name();
  s.service.backend = backend_.name();
  s.service.simulated = backend_.simulated();
  s.service.started_ms = started_ms_;
  std::vector<std::string> errors;
  for (const DeviceInfo& d : devices_) {
    GpuView g{d.index, d.name, d.uuid, d.memory_total_bytes, 0, std::nullopt, d.power_limit_w};
    Result<DeviceSample> sample = backend_.sample_device(d.index);
    if (sample.ok()) {
      std::deque<DeviceSample>& kept = samples_[d.index];
      kept.push_back(*sample);
      while (kept.size() > history_) kept.pop_front();
      g.latest = *sample;
    } else {
      errors.push_back(sample.error().message());
    }
    Result<std::vector<ProcessSample>> processes = backend_.sample_processes(d.index);
    if (processes.ok()) {
      for (const ProcessSample& p : *processes) {
        ProcessIdentity who = describe_ ? describe_(p.pid) : ProcessIdentity{};
        s.processes.push_back(ProcessView{d.index, p.pid, std::nullopt, p.used_memory_bytes,
                                          p.sm_util_pct, p.mps_client, who.user, who.command});
      }
    } else {
      errors.push_back(processes.error().message());
    }
    s.gpus.push_back(std::move(g));
  }
  for (const auto& [device, kept] : samples_)
    s.samples.insert(s.samples.end(), kept.begin(), kept.end());
  std::sort(s.samples.begin(), s.samples.end(),
            [](const DeviceSample& a, const DeviceSample& b) { return a.time_ms < b.time_ms; });
  if (!errors.empty()) input.error = errors.front();
  return input;
}

Status LocalTopSource::cancel(int64_t /*id*/) {
  return Error("no colo serve runs here: only its jobs can be cancelled from colo top");
}

Result<LogChunk> LocalTopSource::read_log(int64_t /*id*/, uint64_t /*offset*/) {
  return Error("no colo serve runs here: there are no job logs to follow");
}

void follow_log(TopSource& source, TopState& state) {
  if (state.mode != TopMode::kLog || state.log_ended) return;
  // A few chunks at most per step, so a large log does not stall the screen.
  for (int i = 0; i < 4; ++i) {
    Result<LogChunk> chunk = source.read_log(state.log_job, state.log_offset);
    if (!chunk.ok()) {
      state.message = chunk.error().message();
      return;
    }
    if (!state.log_path.empty() && chunk->path != state.log_path && state.log_offset > 0) {
      // A new attempt writes a new file: read it from its start.
      state.log_offset = 0;
      chunk = source.read_log(state.log_job, 0);
      if (!chunk.ok()) {
        state.message = chunk.error().message();
        return;
      }
    }
    append_log(state, chunk->path, chunk->data, chunk->next_offset,
               chunk->ended && chunk->data.empty());
    if (chunk->data.empty()) return;
  }
}

}  // namespace colo
