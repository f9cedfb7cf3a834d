#include "common/heap.h"

#include <algorithm>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace colo {

bool HeapTrimmer::maybe_trim() {
#if defined(__GLIBC__)
  const size_t free_bytes = ::mallinfo2().fordblks;
  if (free_bytes <= free_after_trim_ + slack_bytes_) {
    free_after_trim_ = std::min(free_after_trim_, free_bytes);
    return false;
  }
  ::malloc_trim(0);
  free_after_trim_ = ::mallinfo2().fordblks;
  return true;
#else
  return false;
#endif
}

}  // namespace colo
