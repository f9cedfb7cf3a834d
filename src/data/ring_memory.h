// RingMemory: the POSIX shared-memory segment a loader writes batches into
// and consumers map read-only.
//
// Layout (all offsets in bytes, integers little-endian):
//   0      RingHeader (one page): magic, version, geometry, the loader's pid
//   4096   slot 0, then slot 1, ... each `slot_stride` bytes:
//            +0                 SlotHeader (chunk number, samples)
//            +64                int64 labels[chunk_samples]
//            +64 + 8*chunk      int64 sample ids[chunk_samples]
//            +images_offset     float32 images[chunk_samples][3][size][size]
//                               (page-aligned)
// The consumer learns the same numbers from the loader's hello reply and
// checks them against the header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace colo {

inline constexpr uint64_t kRingMagic = 0x31415441444f4c43ULL;  // "CLODATA1"
inline constexpr uint32_t kRingVersion = 1;
inline constexpr uint64_t kRingPage = 4096;

struct RingGeometry {
  uint32_t slots = 0;
  uint32_t chunk_samples = 0;
  uint32_t image_size = 0;  // height = width
  uint32_t channels = 3;
  uint64_t slot_stride = 0;
  uint64_t labels_offset = 64;
  uint64_t ids_offset = 0;
  uint64_t images_offset = 0;
  uint64_t total_bytes = 0;

  uint64_t sample_bytes() const {
    return uint64_t{channels} * image_size * image_size * sizeof(float);
  }
  uint64_t slot_offset(uint32_t slot) const { return kRingPage + slot * slot_stride; }
};

// The geometry of `slots` slots of `chunk_samples` images of size x size.
RingGeometry ring_geometry(uint32_t slots, uint32_t chunk_samples, uint32_t image_size);
// The most slots that fit in `ring_bytes` (at least 1).
uint32_t slots_for_bytes(uint64_t ring_bytes, uint32_t chunk_samples, uint32_t image_size);

struct RingHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t slots;
  uint32_t chunk_samples;
  uint32_t image_size;
  uint32_t channels;
  uint32_t loader_pid;
  uint64_t slot_stride;
  uint64_t labels_offset;
  uint64_t ids_offset;
  uint64_t images_offset;
  uint64_t total_bytes;
  uint64_t dataset_size;
};

struct SlotHeader {
  uint64_t chunk;
  uint32_t samples;
  uint32_t reserved;
};

// Owns a shared-memory segment it created: unmaps and unlinks it when
// destroyed, so the name leaves /dev/shm on every path that unwinds.
class RingMemory {
 public:
  // Creates `name` ("/colo-data-..."; must not exist), sizes it, reserves
  // its pages (so a full /dev/shm is an error now rather than a crash
  // later), maps it and writes the header.
  static Result<std::unique_ptr<RingMemory>> create(const std::string& name,
                                                    const RingGeometry& geometry,
                                                    uint64_t dataset_size);
  ~RingMemory();
  RingMemory(const RingMemory&) = delete;
  RingMemory& operator=(const RingMemory&) = delete;

  const std::string& name() const { return name_; }
  const RingGeometry& geometry() const { return geometry_; }
  uint8_t* slot(uint32_t index) { return base_ + geometry_.slot_offset(index); }

 private:
  RingMemory(std::string name, RingGeometry geometry, uint8_t* base)
      : name_(std::move(name)), geometry_(geometry), base_(base) {}
  std::string name_;
  RingGeometry geometry_;
  uint8_t* base_;
};

// Removes a segment by name; ok when it is already gone.
Status unlink_ring(const std::string& name);

}  // namespace colo
