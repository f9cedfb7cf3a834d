#include "common/heap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace colo {
namespace {

constexpr size_t kMB = size_t{1} << 20;

// A heap whose trim gives back every resident byte not in use but `stuck`.
struct FakeHeap {
  size_t resident = 0;
  size_t in_use = 0;
  size_t stuck = 0;
  int trims = 0;
};

struct Look {
  size_t resident_mb;
  size_t in_use_mb;
  bool trims;
  size_t resident_after_mb;  // what the fake holds once maybe_trim() returned
};

struct TrimCase {
  std::string name;
  size_t slack_mb;
  size_t stuck_mb;
  std::vector<Look> looks;
};

TEST(HeapTrimmer, TrimsWhenTheResidentSlackExceedsTheFloorByTheBound) {
  const std::vector<TrimCase> cases = {
      {"slack within the bound: left alone", 8, 0, {{85, 80, false, 85}, {88, 80, false, 88}}},
      {"slack over the bound: trimmed once, not again while nothing was freed",
       8,
       2,
       {{100, 80, true, 82}, {82, 80, false, 82}, {83, 81, false, 83}}},
      {"pages coming back climb to the bound, then are trimmed again",
       8,
       2,
       {{100, 80, true, 82}, {90, 80, false, 90}, {91, 80, true, 82}}},
      {"what trimming cannot give back raises the floor, and the bound is above it",
       8,
       12,
       {{120, 80, true, 92}, {99, 80, false, 99}, {100, 80, false, 100}, {101, 80, true, 92}}},
      {"the floor falls with the slack",
       8,
       12,
       {{120, 80, true, 92}, {83, 80, false, 83}, {91, 80, false, 91}, {92, 80, true, 92}}},
      {"more in use than resident (pages not yet touched) is no slack",
       8,
       0,
       {{70, 80, false, 70}, {85, 80, false, 85}}},
      {"a zero bound trims whenever anything above the floor is resident",
       0,
       1,
       {{82, 80, true, 81}, {81, 80, false, 81}, {82, 80, true, 81}}},
  };
  for (const TrimCase& c : cases) {
    SCOPED_TRACE(c.name);
    FakeHeap heap;
    heap.stuck = c.stuck_mb * kMB;
    HeapTrimmer trimmer(
        c.slack_mb * kMB,
        [&heap] {
          return HeapReading{heap.resident, heap.in_use};
        },
        [&heap] {
          ++heap.trims;
          heap.resident = std::min(heap.resident, heap.in_use + heap.stuck);
        });
    for (size_t i = 0; i < c.looks.size(); ++i) {
      const Look& look = c.looks[i];
      SCOPED_TRACE("look " + std::to_string(i));
      heap.resident = look.resident_mb * kMB;
      heap.in_use = look.in_use_mb * kMB;
      EXPECT_EQ(trimmer.maybe_trim(), look.trims);
      EXPECT_EQ(heap.resident / kMB, look.resident_after_mb);
    }
  }
}

// Resident pages of this process, from /proc/self/statm.
long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0;
  long resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// 64 MB in small blocks, all freed but the last one, which keeps the heap
// from shrinking at its top: only trimming returns the pages.
std::unique_ptr<char[]> fill_and_free_below_one_block() {
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 64 * 1024; ++i) {
    blocks.push_back(std::make_unique<char[]>(1000));
    blocks.back()[0] = 1;  // touched: resident
  }
  std::unique_ptr<char[]> last = std::make_unique<char[]>(1000);
  blocks.clear();
  return last;
}

TEST(HeapTrimmer, GivesFreedPagesBackOnceMoreThanTheSlackIsResident) {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "trimming is glibc's malloc's (AddressSanitizer brings its own)";
#endif
  HeapTrimmer lax(size_t{1} << 40);
  HeapTrimmer trimmer(16 * kMB);
  std::unique_ptr<char[]> kept = fill_and_free_below_one_block();
  const long before = resident_bytes();
  const HeapReading freed = read_heap();
  EXPECT_GT(freed.resident_anon_bytes, freed.in_use_bytes + 48 * kMB) << "freed, still resident";
  EXPECT_FALSE(lax.maybe_trim()) << "less is resident than its slack";
  EXPECT_GT(resident_bytes(), before - (long{8} << 20));
  EXPECT_TRUE(trimmer.maybe_trim());
  EXPECT_LT(resident_bytes(), before - (long{32} << 20)) << "most of 64 MB given back";
  EXPECT_FALSE(trimmer.maybe_trim()) << "nothing freed since: no second trim";
}

TEST(ReadHeap, CountsTouchedBlocksAsInUseAndResident) {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "mallinfo2 is glibc's malloc's (AddressSanitizer brings its own)";
#endif
  const HeapReading before = read_heap();
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 32 * 1024; ++i) {
    blocks.push_back(std::make_unique<char[]>(1000));
    for (int j = 0; j < 1000; j += 256) blocks.back()[j] = 1;
  }
  const HeapReading after = read_heap();
  EXPECT_GE(after.in_use_bytes, before.in_use_bytes + 30 * kMB);
  EXPECT_GE(after.resident_anon_bytes, before.resident_anon_bytes + 30 * kMB);
}

// Whether the mapping of this process that holds `p` has transparent huge
// pages advised ("hg" among its VmFlags in /proc/self/smaps); nullopt when
// no mapping holds it.
std::optional<bool> huge_pages_advised(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t from = 0;
    uintptr_t to = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from <= at && at < to;
    } else if (inside && line.starts_with("VmFlags:")) {
      return (line + " ").find(" hg ") != std::string::npos;
    }
  }
  return std::nullopt;
}

TEST(HugePagesForHeap, AskedForThemTheHeapServesLargeAllocationsUnderTheAdvice) {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the heap is glibc's malloc's (AddressSanitizer brings its own)";
#endif
  std::ifstream mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(mode_file, mode);
  if (mode.empty() || mode.find("[never]") != std::string::npos)
    GTEST_SKIP() << "this kernel gives no transparent huge pages (" << mode << ")";
  // Without the call, an 8 MiB block is a mapping of its own, not advised.
  use_huge_pages_for_heap(64 * kMB);
  std::unique_ptr<char[]> large = std::make_unique<char[]>(8 * kMB);
  large[0] = 1;
  EXPECT_EQ(huge_pages_advised(large.get()), true) << "THP mode: " << mode;
  EXPECT_EQ(huge_pages_advised(large.get() + 4 * kMB), true);
  const uintptr_t end = reinterpret_cast<uintptr_t>(::sbrk(0));
  EXPECT_LT(reinterpret_cast<uintptr_t>(large.get()), end) << "from the heap, below its break";
}

}  // namespace
}  // namespace colo
