#include "store/store_file.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "store/testing/fake_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

// What happens to a store's file after colo opened it, and what
// store_file_damage() then says.
struct DamageCase {
  std::string name;
  std::function<void(const std::string& path)> act;
  std::string damage;  // a substring; "" for none
};

// A new store at `path`, held as colo holds it, its descriptor in `held`.
void hold_a_new_store(const std::string& path, std::optional<UniqueFd>& held) {
  Result<UniqueFd> fd = hold_store_file(path);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  Result<SqliteDb> db = open_store_writable(path, true);
  ASSERT_TRUE(db.ok()) << db.error().message();
  held = std::move(fd).value();
}

class StoreFileDamage : public ::testing::TestWithParam<DamageCase> {};

TEST_P(StoreFileDamage, IsToldThroughTheHeldDescriptor) {
  const DamageCase& c = GetParam();
  testing::TempDir dir("colo_store_file_test");
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/runs.db";
  std::optional<UniqueFd> held;
  ASSERT_NO_FATAL_FAILURE(hold_a_new_store(path, held));
  c.act(path);
  const std::string damage = store_file_damage(held->get(), path);
  if (c.damage.empty()) {
    EXPECT_EQ(damage, "");
  } else {
    EXPECT_THAT(damage, HasSubstr(c.damage));
  }
}

void overwrite(const std::string& path, off_t at, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), at), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

INSTANTIATE_TEST_SUITE_P(
    Table, StoreFileDamage,
    ::testing::Values(
        DamageCase{"sound", [](const std::string&) {}, ""},
        DamageCase{"deleted", [](const std::string& p) { ::unlink(p.c_str()); },
                   "was deleted under the service"},
        DamageCase{"moved_away",
                   [](const std::string& p) { std::rename(p.c_str(), (p + ".old").c_str()); },
                   "was moved away under the service"},
        DamageCase{"replaced",
                   [](const std::string& p) {
                     std::rename(p.c_str(), (p + ".old").c_str());
                     const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
                     ::close(fd);
                   },
                   "was replaced under the service by another file"},
        DamageCase{"truncated_inside_the_header",
                   [](const std::string& p) { ASSERT_EQ(::truncate(p.c_str(), 50), 0); },
                   "was truncated under the service to 50 bytes"},
        DamageCase{"truncated_below_its_page_count",
                   [](const std::string& p) { ASSERT_EQ(::truncate(p.c_str(), 200), 0); },
                   "where its header counts"},
        DamageCase{"header_overwritten", [](const std::string& p) { overwrite(p, 0, "garbage"); },
                   "no longer starts with SQLite's header"},
        DamageCase{"schema_page_overwritten",
                   [](const std::string& p) { overwrite(p, 100, std::string(1, '\x42')); },
                   "no longer SQLite's schema table"}),
    [](const auto& info) { return info.param.name; });

// A store whose file is shorter than its header counts is damaged only if it
// stays so: a checkpoint extending the file writes the header first and
// grows the file after (seen beside a service: a history written into its
// store by another process halted it as "truncated").
TEST(StoreFile, DamageIsConfirmedByTheSameVerdictTwiceNotByAGrowingFile) {
  testing::TempDir dir("colo_store_file_test");
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/runs.db";
  std::optional<UniqueFd> held;
  ASSERT_NO_FATAL_FAILURE(hold_a_new_store(path, held));
  ASSERT_EQ(::truncate(path.c_str(), 200), 0);
  const std::string first = store_file_damage(held->get(), path);
  ASSERT_THAT(first, HasSubstr("where its header counts"));
  ASSERT_EQ(::truncate(path.c_str(), 300), 0);  // growing, as under a checkpoint
  const std::string growing = store_file_damage(held->get(), path);
  EXPECT_FALSE(store_damage_confirmed(first, growing));
  EXPECT_TRUE(store_damage_confirmed(growing, store_file_damage(held->get(), path)));
  EXPECT_FALSE(store_damage_confirmed("", ""));
  EXPECT_FALSE(store_damage_confirmed("", "was deleted under the service"));
  EXPECT_TRUE(
      store_damage_confirmed("was deleted under the service", "was deleted under the service"));
}

TEST(StoreFile, AnInvalidDescriptorHasNoDamageToTell) {
  EXPECT_EQ(store_file_damage(-1, "/nonexistent/runs.db"), "");
}

TEST(StoreFile, IsHeldNeverThroughALinkAndOnlyForItsOwner) {
  testing::TempDir dir("colo_store_file_test");
  ASSERT_FALSE(dir.path().empty());
  const std::string real = dir.path() + "/real.db";
  const std::string link = dir.path() + "/link.db";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  Result<UniqueFd> through_link = hold_store_file(link);
  ASSERT_FALSE(through_link.ok());
  EXPECT_THAT(through_link.error().message(), HasSubstr("is a symbolic link"));
  struct stat st {};
  EXPECT_NE(::lstat(real.c_str(), &st), 0) << "nothing was created where the link points";

  const int fd = ::open(real.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ::fchmod(fd, 0644);
  ::close(fd);
  Result<UniqueFd> held = hold_store_file(real);
  ASSERT_TRUE(held.ok());
  ASSERT_EQ(::stat(real.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(StoreFile, ReadOnlyOpensOnlyAStoreOfTheLatestSchema) {
  testing::TempDir dir("colo_store_file_test");
  ASSERT_FALSE(dir.path().empty());
  EXPECT_FALSE(open_store_read_only(dir.path() + "/missing.db").ok());
  const std::string path = dir.path() + "/runs.db";
  ASSERT_TRUE(open_store_writable(path, true).ok());
  EXPECT_TRUE(open_store_read_only(path).ok());
  EXPECT_FALSE(open_store_writable(dir.path() + "/other.db", false).ok())
      << "not created unless asked";
}

struct InMemoryCase {
  std::string path;
  bool in_memory = false;
};

class InMemoryStore : public ::testing::TestWithParam<InMemoryCase> {};

TEST_P(InMemoryStore, HasNoFileOfItsOwn) {
  EXPECT_EQ(is_in_memory_store(GetParam().path), GetParam().in_memory) << GetParam().path;
}

INSTANTIATE_TEST_SUITE_P(Table, InMemoryStore,
                         ::testing::Values(InMemoryCase{"", true}, InMemoryCase{":memory:", true},
                                           InMemoryCase{"file:x?mode=memory", true},
                                           InMemoryCase{"runs.db", false},
                                           InMemoryCase{"/var/lib/colo/runs.db", false}));

}  // namespace
}  // namespace colo
