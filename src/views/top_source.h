// Where `colo top` reads from: a running colo serve (its snapshot over the
// socket; cancelling and logs go through the same socket, so the service
// decides who may), or, when none runs, this machine's GPUs through the GPU
// backend directly (processes only, like nvtop).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "serve/client.h"
#include "serve/process_identity.h"
#include "views/top_model.h"

namespace colo {

// A piece of a job's log: the latest attempt's file from `offset` on.
struct LogChunk {
  std::string path;
  std::string data;
  uint64_t next_offset = 0;
  bool ended = false;  // the job has ended: nothing more will come
};

// Not thread-safe: one thread reads and acts.
class TopSource {
 public:
  virtual ~TopSource() = default;
  // The current snapshot. When reading fails, the last good snapshot with
  // `error` saying why (never an empty screen over a passing hiccup).
  virtual TopInput read() = 0;
  // Cancels one job through the service (which checks that it is the caller's).
  virtual Status cancel(int64_t id) = 0;
  virtual Result<LogChunk> read_log(int64_t id, uint64_t offset) = 0;
};

class ServiceTopSource final : public TopSource {
 public:
  explicit ServiceTopSource(ServiceClient client) : client_(std::move(client)) {}
  TopInput read() override;
  Status cancel(int64_t id) override;
  Result<LogChunk> read_log(int64_t id, uint64_t offset) override;

 private:
  ServiceClient client_;
  TopInput last_;
};

// This machine's GPUs read through `backend` (borrowed), with the last
// `history` device samples per GPU kept like the service keeps them.
class LocalTopSource final : public TopSource {
 public:
  LocalTopSource(GpuBackend& backend, std::vector<DeviceInfo> devices, Clock& clock,
                 ProcessDescriber describe = describe_process_from_proc, size_t history = 240);
  TopInput read() override;
  Status cancel(int64_t id) override;
  Result<LogChunk> read_log(int64_t id, uint64_t offset) override;

 private:
  GpuBackend& backend_;
  std::vector<DeviceInfo> devices_;
  Clock& clock_;
  ProcessDescriber describe_;
  size_t history_;
  std::map<int, std::deque<DeviceSample>> samples_;
  UnixMillis started_ms_;
};

// One step of following the state's log: appends what is new; when the job
// moved on to a new attempt (another file), starts that file from its
// beginning. Errors go to the state's message.
void follow_log(TopSource& source, TopState& state);

}  // namespace colo
