// MIG planning: turn requested GPU-instance profiles (or jobs' memory needs)
// into non-overlapping placements on one GPU, or say exactly why none exists.
// Pure and deterministic: the same geometry and requests give the same plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "mig/mig_profiles.h"

namespace colo {

// `count` instances of one profile of the geometry.
struct MigRequest {
  std::string profile;  // a profile name of the geometry
  int count = 1;
  // Memory-need mode: the need this instance was chosen for.
  std::optional<uint64_t> needed_bytes;
};

// One planned GPU instance: memory slices [start, start + size).
struct MigPlacement {
  std::string profile;
  int profile_id = 0;
  int start = 0;
  int size = 0;
  int compute_slices = 0;
  uint64_t memory_bytes = 0;
  std::optional<uint64_t> needed_bytes;  // copied from the request
};

// Parses "3g.40gb 2g.20gb 1g.10gb:2": words separated by spaces or commas,
// each a profile name (case-insensitive) with an optional ":COUNT". Each
// element of `words` may hold several words. Fails naming the unknown profile
// and listing the valid ones, or naming a bad count.
Result<std::vector<MigRequest>> parse_mig_requests(const MigGeometry& geometry,
                                                   const std::vector<std::string>& words);

// Parses "10GiB,20GiB,5G" into byte sizes (see parse_bytes); fails naming the
// bad element.
Result<std::vector<uint64_t>> parse_memory_needs(std::string_view text);

// One request per need: the profile with the fewest memory slices, then the
// fewest compute slices, whose memory is at least the need. "+me" profiles are
// never chosen (they exist for media engines). Fails naming the need that no
// profile holds and the largest profile's memory.
Result<std::vector<MigRequest>> mig_requests_for_memory(const MigGeometry& geometry,
                                                        const std::vector<uint64_t>& needs);

// A placement of every requested instance on a GPU already holding the GPU
// instances `occupied` (none: an empty GPU), sorted by start; `occupied`
// instances are left where they are and are not part of the result.
// Exhaustive backtracking over allowed starts, largest profiles first; among
// starts it tries first the one leaving the largest contiguous free block, then
// the one leaving the most allowed starts for the instances still to place.
// The Error is the refusal, checked in this order: an unknown profile, more
// instances of a profile than fit on the GPU, more compute slices or memory
// slices than the GPU has, and "no non-overlapping starts" with every allowed
// start tried.
Result<std::vector<MigPlacement>> plan_mig(const MigGeometry& geometry,
                                           const std::vector<MigRequest>& requests,
                                           const std::vector<MigPlacement>& occupied = {});

// "3g.20gb + 5 x 1g.5gb", in the order of the requests (merging equal names).
std::string describe_requests(const std::vector<MigRequest>& requests);

}  // namespace colo
