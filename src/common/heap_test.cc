#include "common/heap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <vector>

namespace colo {
namespace {

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

TEST(HeapTrimmer, GivesFreedPagesBackOnceMoreThanTheSlackWasFreed) {
#if !defined(__GLIBC__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "trimming is glibc's malloc's (AddressSanitizer brings its own)";
#endif
  HeapTrimmer lax(size_t{1} << 40);
  HeapTrimmer trimmer(size_t{16} << 20);
  std::unique_ptr<char[]> kept = fill_and_free_below_one_block();
  const long before = resident_bytes();
  EXPECT_FALSE(lax.maybe_trim()) << "less was freed than its slack";
  EXPECT_GT(resident_bytes(), before - (long{8} << 20));
  EXPECT_TRUE(trimmer.maybe_trim());
  EXPECT_LT(resident_bytes(), before - (long{32} << 20)) << "most of 64 MB given back";
  EXPECT_FALSE(trimmer.maybe_trim()) << "nothing freed since: no second trim";
}

}  // namespace
}  // namespace colo
