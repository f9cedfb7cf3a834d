// The process's own heap.
#pragma once

#include <cstddef>
#include <functional>

namespace colo {

// One look at the heap: what of the process's memory is resident and
// anonymous (its heap, stacks and other private mappings), and how much of
// it malloc has handed out.
struct HeapReading {
  size_t resident_anon_bytes = 0;  // /proc/self/statm: resident less file-backed
  size_t in_use_bytes = 0;         // mallinfo2: uordblks + hblkhd
};

// This process's heap as it is now (zeros where the C library is not glibc's).
HeapReading read_heap();

// Asks for transparent huge pages under the next `bytes` of the heap, where
// the kernel gives them on request (THP "madvise" mode; "always" gives them
// anyway, "never" not at all): a process about to fill tens of megabytes with
// small records it reads in no order (colo simulate of a 10,000-point sweep)
// otherwise takes a page fault per 4 KiB and a TLB miss on most reads. The
// heap is grown by `bytes` now (address space only: nothing is resident until
// written), kept from being trimmed back, and allocations up to `bytes` come
// from it instead of mappings of their own; then what is written is resident
// in 2 MiB pages. `bytes` is capped at 512 MiB. Where the C library is not
// glibc's it does nothing; where a step fails it stops there, and malloc works
// as it would (a failed growth leaves allocations to mappings as before). For
// a short-lived command: its resident memory grows in 2 MiB steps and is not
// given back.
void use_huge_pages_for_heap(size_t bytes);

// Gives the heap's free pages back to the kernel (glibc's malloc_trim) once
// more of them are resident than a bound, so that what the process once
// needed does not stay in its resident set. glibc keeps freed memory for
// reuse, and a fragmented heap cannot shrink from its top: with 10,000 jobs
// just queued, colo serve's RSS fell from 168 MB to 96 MB when trimmed; and
// pages given back come back one by one as malloc reuses their free chunks,
// so that a heap trimmed once climbs back over minutes (issue 59: 95 to
// 111 MB) unless it is trimmed again.
//
// The bound: right after each maybe_trim(), the resident bytes not in use
// (`resident_anon_bytes - in_use_bytes`, the slack) are at most the floor
// plus `slack_bytes`, where the floor is the least slack seen since the last
// trim (at first 0): what trimming cannot give back (stacks, partly used
// pages, malloc's headers). Trimming again when the floor alone exceeds the
// bound would give nothing back, so it waits for `slack_bytes` more.
// Not thread-safe; the reader and the trimmer it is given are its to call.
class HeapTrimmer {
 public:
  using Read = std::function<HeapReading()>;
  using Trim = std::function<void()>;

  // This process's heap (read_heap, malloc_trim); a no-op where the C library
  // is not glibc's.
  explicit HeapTrimmer(size_t slack_bytes);
  // Another heap, as `read` sees it, trimmed by `trim` (tests).
  HeapTrimmer(size_t slack_bytes, Read read, Trim trim);

  // Trims when the slack exceeds the floor by more than `slack_bytes`; true
  // when it did. Looking reads /proc/self/statm and walks malloc's free lists
  // (mallinfo2): tens of microseconds; trimming takes milliseconds.
  bool maybe_trim();

 private:
  size_t slack_bytes_;
  Read read_;
  Trim trim_;
  size_t floor_ = 0;
};

}  // namespace colo
