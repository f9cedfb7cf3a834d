#include "data/ring_memory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/units.h"

namespace colo {
namespace {

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

RingGeometry ring_geometry(uint32_t slots, uint32_t chunk_samples, uint32_t image_size) {
  RingGeometry g;
  g.slots = slots;
  g.chunk_samples = chunk_samples;
  g.image_size = image_size;
  g.labels_offset = sizeof(SlotHeader) < 64 ? 64 : sizeof(SlotHeader);
  g.ids_offset = g.labels_offset + 8ULL * chunk_samples;
  g.images_offset = round_up(g.ids_offset + 8ULL * chunk_samples, kRingPage);
  g.slot_stride = round_up(g.images_offset + chunk_samples * g.sample_bytes(), kRingPage);
  g.total_bytes = kRingPage + uint64_t{slots} * g.slot_stride;
  return g;
}

uint32_t slots_for_bytes(uint64_t ring_bytes, uint32_t chunk_samples, uint32_t image_size) {
  const RingGeometry one = ring_geometry(1, chunk_samples, image_size);
  const uint64_t usable = ring_bytes > kRingPage ? ring_bytes - kRingPage : 0;
  return static_cast<uint32_t>(std::max<uint64_t>(1, usable / one.slot_stride));
}

Result<std::unique_ptr<RingMemory>> RingMemory::create(const std::string& name,
                                                       const RingGeometry& geometry,
                                                       uint64_t dataset_size) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Error(fmt::format("cannot create shared memory {}: {}", name, std::strerror(errno)));
  }
  auto fail = [&](const std::string& what) -> Error {
    int err = errno;
    ::close(fd);
    shm_unlink(name.c_str());
    return Error(fmt::format("shared memory {} ({}): {}: {}", name,
                             format_bytes(geometry.total_bytes), what, std::strerror(err)));
  };
  if (ftruncate(fd, static_cast<off_t>(geometry.total_bytes)) != 0) return fail("cannot size it");
  if (int rc = posix_fallocate(fd, 0, static_cast<off_t>(geometry.total_bytes)); rc != 0) {
    errno = rc;
    return fail(
        "cannot reserve its pages (is /dev/shm full or small? lower the ring size, or "
        "enlarge /dev/shm)");
  }
  void* p = mmap(nullptr, geometry.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail("cannot map it");
  ::close(fd);
  auto* base = static_cast<uint8_t*>(p);
  RingHeader h{};
  h.magic = kRingMagic;
  h.version = kRingVersion;
  h.slots = geometry.slots;
  h.chunk_samples = geometry.chunk_samples;
  h.image_size = geometry.image_size;
  h.channels = geometry.channels;
  h.loader_pid = static_cast<uint32_t>(getpid());
  h.slot_stride = geometry.slot_stride;
  h.labels_offset = geometry.labels_offset;
  h.ids_offset = geometry.ids_offset;
  h.images_offset = geometry.images_offset;
  h.total_bytes = geometry.total_bytes;
  h.dataset_size = dataset_size;
  std::memcpy(base, &h, sizeof h);
  return std::unique_ptr<RingMemory>(new RingMemory(name, geometry, base));
}

RingMemory::~RingMemory() {
  munmap(base_, geometry_.total_bytes);
  shm_unlink(name_.c_str());
}

Status unlink_ring(const std::string& name) {
  if (shm_unlink(name.c_str()) != 0 && errno != ENOENT)
    return Error(fmt::format("cannot remove shared memory {}: {}", name, std::strerror(errno)));
  return OkStatus();
}

}  // namespace colo
