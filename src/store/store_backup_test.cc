#include "store/store_backup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/run_store.h"
#include "store/testing/fake_runs.h"
#include "store/testing/lifecycle_runs.h"

namespace colo {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// Sets the process's umask for a scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : previous_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(previous_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t previous_;
};

// A store on disk held open as a service holds its own: `runs` runs of two
// jobs each, written after the store's last checkpoint, so that they are
// only in its WAL.
class StoreBackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    Result<std::unique_ptr<RunStore>> store = RunStore::open(live());
    ASSERT_TRUE(store.ok()) << store.error().message();
    live_ = std::move(store).value();
  }
  void add_runs(int runs) {
    for (int i = 0; i < runs; ++i) {
      NewRun run = make_run("naive", kT0 + i);
      run.host = "elsewhere";  // no reader judges its pid
      Result<int64_t> id = live_->begin_run(run);
      ASSERT_TRUE(id.ok()) << id.error().message();
      ASSERT_TRUE(live_
                      ->add_jobs(*id, {make_job("a", {"true"}), make_job("b", {"true"})},
                                 {"a.log", "b.log"}, kT0)
                      .ok());
    }
  }
  std::string live() const { return dir_.path() + "/colo.db"; }
  std::string file(const std::string& name) const { return dir_.path() + "/" + name; }

  TempDir dir_{"colo_store_backup_test"};
  std::unique_ptr<RunStore> live_;
};

TEST_F(StoreBackupTest, TheCopyHoldsEveryRowStillInTheWalOfAStoreOpenElsewhere) {
  add_runs(3);
  // The rows are in the WAL, not yet in the store's file: a copy of that
  // file alone (cp, rsync) would miss them.
  ASSERT_GT(file_size(live() + "-wal"), 0);

  Result<StoreCopy> copy = backup_store(live(), file("backup.db"), ExistingFile::kRefuse);
  ASSERT_TRUE(copy.ok()) << copy.error().message();
  EXPECT_EQ(copy->path, file("backup.db"));
  EXPECT_EQ(copy->runs, 3);
  EXPECT_EQ(copy->jobs, 6);
  EXPECT_EQ(copy->schema_version, live_->schema_version());
  EXPECT_EQ(copy->bytes, file_size(file("backup.db")));

  Result<std::unique_ptr<RunStore>> read = RunStore::open_read_only(file("backup.db"));
  ASSERT_TRUE(read.ok()) << read.error().message();
  Result<std::vector<RunRow>> runs = (*read)->list_runs(10);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 3u);
  // The live store goes on being written.
  add_runs(1);
  EXPECT_EQ(live_->list_runs(10)->size(), 4u);
  EXPECT_EQ((*read)->list_runs(10)->size(), 3u);
}

TEST_F(StoreBackupTest, TheCopyIsReadableByItsOwnerOnlyWhateverTheUmask) {
  add_runs(1);
  ScopedUmask umask(022);
  ASSERT_TRUE(backup_store(live(), file("backup.db"), ExistingFile::kRefuse).ok());
  struct stat st {};
  ASSERT_EQ(::stat(file("backup.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // Nothing else is left beside it: no file it was staged in, no WAL.
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path()))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ::testing::ElementsAre("backup.db", "colo.db", "colo.db-shm", "colo.db-wal"));
}

TEST_F(StoreBackupTest, ALinkAtTheTargetIsNeverFollowedAndWhereItPointsIsUntouched) {
  add_runs(1);
  const std::string victim = file("victim");
  std::ofstream(victim) << "keep me\n";
  std::filesystem::create_symlink(victim, file("backup.db"));
  Result<StoreCopy> refused = backup_store(live(), file("backup.db"), ExistingFile::kRefuse);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("already exists"));
  EXPECT_EQ(file_text(victim), "keep me\n");
  EXPECT_TRUE(std::filesystem::is_symlink(file("backup.db")));

  // Replacing replaces the link itself.
  Result<StoreCopy> replaced = backup_store(live(), file("backup.db"), ExistingFile::kReplace);
  ASSERT_TRUE(replaced.ok()) << replaced.error().message();
  EXPECT_EQ(file_text(victim), "keep me\n");
  EXPECT_FALSE(std::filesystem::is_symlink(file("backup.db")));
  EXPECT_EQ(replaced->runs, 1);
}

TEST_F(StoreBackupTest, AnExistingFileStaysUnlessReplacedAndNeverTheStoreItself) {
  add_runs(1);
  std::ofstream(file("backup.db")) << "an older backup\n";
  Result<StoreCopy> refused = backup_store(live(), file("backup.db"), ExistingFile::kRefuse);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("--force"));
  EXPECT_EQ(file_text(file("backup.db")), "an older backup\n");
  // The WAL of the file replaced goes with it: SQLite would read it into the copy.
  std::ofstream(file("backup.db-wal")) << "the older backup's WAL\n";
  ASSERT_TRUE(backup_store(live(), file("backup.db"), ExistingFile::kReplace).ok());
  EXPECT_FALSE(std::filesystem::exists(file("backup.db-wal")));

  for (const std::string& own : {live(), live() + "-wal", live() + "-journal"}) {
    Result<StoreCopy> onto_itself = backup_store(live(), own, ExistingFile::kReplace);
    ASSERT_FALSE(onto_itself.ok()) << own;
    EXPECT_THAT(onto_itself.error().message(), HasSubstr("is the store's own file"));
  }
  EXPECT_EQ(live_->list_runs(10)->size(), 1u);
  EXPECT_TRUE(live_->file_damage().empty()) << live_->file_damage();
}

TEST_F(StoreBackupTest, OnlyAColoStoreAtItsRealPathIsBackedUp) {
  std::filesystem::create_symlink(live(), file("link.db"));
  Result<StoreCopy> link = backup_store(file("link.db"), file("a.db"), ExistingFile::kRefuse);
  ASSERT_FALSE(link.ok());
  EXPECT_THAT(link.error().message(), HasSubstr("is a symbolic link"));

  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(file("other.db").c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "CREATE TABLE t (x)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  Result<StoreCopy> foreign = backup_store(file("other.db"), file("b.db"), ExistingFile::kRefuse);
  ASSERT_FALSE(foreign.ok());
  EXPECT_THAT(foreign.error().message(), HasSubstr("is not a colo store"));

  Result<StoreCopy> missing = backup_store(file("none.db"), file("c.db"), ExistingFile::kRefuse);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message(), HasSubstr("no run store there"));
  for (const char* name : {"a.db", "b.db", "c.db"})
    EXPECT_FALSE(std::filesystem::exists(file(name)));
}

TEST_F(StoreBackupTest, CheckReadsEveryPageOfACopyAndFindsDamage) {
  add_runs(40);
  ASSERT_TRUE(backup_store(live(), file("backup.db"), ExistingFile::kRefuse).ok());
  Result<StoreCopy> good = check_store_copy(file("backup.db"));
  ASSERT_TRUE(good.ok()) << good.error().message();
  EXPECT_EQ(good->runs, 40);
  EXPECT_EQ(good->jobs, 80);
  // Checking writes nothing beside the copy.
  EXPECT_FALSE(std::filesystem::exists(file("backup.db-wal")));
  EXPECT_FALSE(std::filesystem::exists(file("backup.db-shm")));

  // Garbage over the last page, where the header still counts it.
  const int64_t size = file_size(file("backup.db"));
  {
    std::fstream f(file("backup.db"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(size - 4096 + 8);
    const std::string garbage(2000, '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  Result<StoreCopy> bad = check_store_copy(file("backup.db"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr("is damaged"));
}

TEST_F(StoreBackupTest, ARunStoreCopiesItselfForAShardToPublish) {
  add_runs(2);
  Result<StoreCopy> copy = live_->copy_to(file("published.db"));
  ASSERT_TRUE(copy.ok()) << copy.error().message();
  EXPECT_EQ(copy->runs, 2);
  Result<StoreCopy> again = live_->copy_to(file("published.db"));
  EXPECT_FALSE(again.ok());
  add_runs(1);
  Result<StoreCopy> replaced = live_->copy_to(file("published.db"), ExistingFile::kReplace);
  ASSERT_TRUE(replaced.ok()) << replaced.error().message();
  EXPECT_EQ(replaced->runs, 3);
}

}  // namespace
}  // namespace colo
