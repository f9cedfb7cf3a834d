#include "common/heap.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace colo {
namespace {

size_t slack_of(const HeapReading& r) {
  return r.resident_anon_bytes > r.in_use_bytes ? r.resident_anon_bytes - r.in_use_bytes : 0;
}

void trim_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace

HeapReading read_heap() {
  HeapReading r;
#if defined(__GLIBC__)
  // statm: size resident shared text lib data dt, in pages; "shared" is the
  // resident file-backed pages (the binary, the libraries). The kernel's file for
  // this process: no path a user can touch; three numbers read, no more.
  if (FILE* statm = std::fopen("/proc/self/statm", "re")) {
    unsigned long size = 0, resident = 0, shared = 0;
    if (std::fscanf(statm, "%lu %lu %lu", &size, &resident, &shared) == 3 && resident > shared)
      r.resident_anon_bytes = (resident - shared) * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::fclose(statm);
  }
  const struct mallinfo2 info = ::mallinfo2();
  r.in_use_bytes = info.uordblks + info.hblkhd;
#endif
  return r;
}

void use_huge_pages_for_heap(size_t bytes) {
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  const int limit = static_cast<int>(std::min<size_t>(bytes, size_t{1} << 29));
  // Allocations up to `bytes` from the heap, and the heap's top not given
  // back below it.
  if (::mallopt(M_MMAP_THRESHOLD, limit) == 0 || ::mallopt(M_TRIM_THRESHOLD, 2 * limit) == 0)
    return;
  // Grows the heap by `bytes` (an array left uninitialised: malloc writes
  // only the chunk's header): the freed chunk stays at its top, for what
  // comes next.
  std::unique_ptr<char[]> grown(new (std::nothrow) char[static_cast<size_t>(limit) - 64]);
  if (grown == nullptr) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto at = reinterpret_cast<uintptr_t>(grown.get());
  const uintptr_t from_at = at - at % page;
  const auto to_at = reinterpret_cast<uintptr_t>(::sbrk(0));
  grown.reset();
  // Only a chunk of the heap (the main arena: `arena` bytes below the
  // break), not a mapping of its own, had the heap failed to grow.
  const size_t arena = ::mallinfo2().arena;
  if (to_at > from_at && to_at - from_at <= arena) {
    // The page the chunk starts in, an address below the array: no pointer
    // into it could name it.
    void* from = reinterpret_cast<void*>(from_at);  // NOLINT(performance-no-int-to-ptr)
    ::madvise(from, to_at - from_at, MADV_HUGEPAGE);
  }
#else
  (void)bytes;
#endif
}

HeapTrimmer::HeapTrimmer(size_t slack_bytes) : HeapTrimmer(slack_bytes, read_heap, trim_heap) {}

HeapTrimmer::HeapTrimmer(size_t slack_bytes, Read read, Trim trim)
    : slack_bytes_(slack_bytes), read_(std::move(read)), trim_(std::move(trim)) {}

bool HeapTrimmer::maybe_trim() {
  const size_t slack = slack_of(read_());
  if (slack <= floor_ + slack_bytes_) {
    floor_ = std::min(floor_, slack);
    return false;
  }
  trim_();
  floor_ = slack_of(read_());
  return true;
}

}  // namespace colo
