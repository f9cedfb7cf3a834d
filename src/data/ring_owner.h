// Ownership records of shared loaders, so that the shared memory of a loader
// that was killed (with its colo) is found and removed by the next start.
//
// <state dir>/data/<ring name>.json names the ring, the loader's pid and the
// pid of the colo that started it (the loader itself when run by hand). The
// loader writes it before it creates the ring and removes it after the ring
// is gone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace colo {

struct RingOwnerRecord {
  std::string shm_name;
  std::string socket_name;
  int loader_pid = 0;
  int owner_pid = 0;  // the colo that started the loader
  std::string hostname;
  int64_t started_ms = 0;
};

std::string ring_owner_dir(const std::string& state_dir);
std::string ring_owner_path(const std::string& state_dir, const std::string& shm_name);
Status write_ring_owner(const std::string& path, const RingOwnerRecord& record);
Result<RingOwnerRecord> read_ring_owner(const std::string& path);

// For every record of this host whose owner and loader are both gone (a
// loader still running for a dead owner is killed first, if its command
// line names the ring): removes the shared memory and the record. A record
// written by another user than root is acted on only for that user's own
// loader process and shared memory (one naming another user's is left
// alone, saying so). Returns one line per thing done.
Result<std::vector<std::string>> cleanup_stale_data_loaders(const std::string& state_dir);

}  // namespace colo
