// What one shared loader serves and how: the dataset, the transform, the
// ring, and where consumers find it. `colo data serve` takes these as flags;
// `colo run` builds them from a job file's [data.NAME] table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "data/dataset.h"
#include "data/transform.h"

namespace colo {

struct LoaderOptions {
  std::string name = "data";            // the dataset's name in the job file
  std::string path;                     // the dataset (required)
  std::optional<DatasetFormat> format;  // default: guessed from the path
  TransformOptions transform;           // size 224, augmentation on
  int threads = 4;                      // decoding threads
  uint64_t ring_bytes = 1ULL << 30;     // shared memory for the ring
  uint32_t chunk_samples = 16;          // samples per slot
  int64_t lag_timeout_ms = 30'000;      // see RingBroker
  uint32_t max_consumers = 64;
  uint64_t seed = 1;  // sample order and augmentation
  std::string cpus;   // CPU list for the loader ("0-3,8"); empty: any
  // Where consumers find it: an abstract Unix socket name (no file) and a
  // shared-memory name. Default: derived from the loader's pid and name.
  std::string socket_name;
  std::string shm_name;
  std::string state_dir;   // ownership records: <state_dir>/data/
  std::string stats_path;  // final statistics (JSON); empty: none
  int parent_pid = 0;      // colo that started it; it exits when that dies
};

// Parses a CPU list such as "0-3,8,10-11".
Result<std::vector<int>> parse_cpu_list(const std::string& text);

// The `colo data serve` arguments that reproduce `options` (after "serve").
std::vector<std::string> serve_arguments(const LoaderOptions& options);

}  // namespace colo
