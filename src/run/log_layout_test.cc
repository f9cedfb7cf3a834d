#include "run/log_layout.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace colo {
namespace {

// `colo run --resume` and `colo profile` find a job's checkpoint and profile
// directories from the log of any of its attempts, in either layout; a path
// in neither gives "".
TEST(LogLayout, TheJobsDirectoriesOfALogInEitherLayout) {
  const std::string run = run_logs_dir("/l", "/s/colo.db", 7);
  const std::string stem = run_job_stem(run, 2, "lr[lr=0.1]");
  for (const std::string& log : {stem + ".log", stem + ".attempt3.log"}) {
    EXPECT_EQ(job_dir_of_log(log, JobDir::kCheckpoint), stem + ".checkpoint");
    EXPECT_EQ(job_dir_of_log(log, JobDir::kProfile), stem + ".profile");
    EXPECT_EQ(job_dir_of_log(log, JobDir::kCheckpoint), run_job_dir(stem, JobDir::kCheckpoint));
    EXPECT_EQ(job_dir_of_log(log, JobDir::kProfile), run_job_dir(stem, JobDir::kProfile));
  }
  EXPECT_EQ(profiler_output("/p/7", "nsys", 2), "/p/7/nsys-attempt2");
  const std::string service = service_logs_dir("/l", "/s/colo.db");
  for (const std::string& log : {service_job_stem(service, 42, "t") + ".log",
                                 service_job_stem(service, 42, "t") + ".attempt2.log"}) {
    EXPECT_EQ(job_dir_of_log(log, JobDir::kCheckpoint), service_checkpoint_dir(service, 42));
    EXPECT_EQ(job_dir_of_log(log, JobDir::kProfile), service_profile_dir(service, 42));
  }
  for (const std::string& neither :
       {std::string("/somewhere/job.log"), std::string("relative.log"), stem + ".progress.jsonl"}) {
    EXPECT_EQ(job_dir_of_log(neither, JobDir::kCheckpoint), "") << neither;
  }
}

// Issue 54 (3): every file of a job goes with it (colo gc left progress
// files and checkpoints), in either layout, and only that job's; the
// attempts' names come from one place.
TEST(LogLayout, RemovingAJobsFilesTakesEveryAttemptsAndItsDirectoriesOnly) {
  namespace fs = std::filesystem;
  std::string templ = ::testing::TempDir() + "layout.XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  const std::string serve = templ + "/serve";
  fs::create_directories(serve + "/jobs");
  fs::create_directories(serve + "/checkpoints/12/sub");
  fs::create_directories(serve + "/profiles/12");
  fs::create_directories(serve + "/checkpoints/120");
  for (const char* f : {"12-train.log", "12-train.attempt2.log", "12-train.progress.jsonl",
                        "12-train.attempt2.progress.jsonl", "120-train.log", "1-train.log"})
    std::ofstream(serve + "/jobs/" + f) << "x";
  std::ofstream(serve + "/checkpoints/12/sub/state") << "x";
  Result<int64_t> removed = remove_job_files(serve + "/jobs/12-train.attempt2.log", 2);
  ASSERT_TRUE(removed.ok()) << removed.error().message();
  EXPECT_EQ(*removed, 6);
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(serve + "/jobs")) left.insert(e.path().filename());
  EXPECT_EQ(left, (std::set<std::string>{"120-train.log", "1-train.log"}));
  EXPECT_FALSE(fs::exists(serve + "/checkpoints/12"));
  EXPECT_FALSE(fs::exists(serve + "/profiles/12"));
  EXPECT_TRUE(fs::exists(serve + "/checkpoints/120"));

  const std::string run = templ + "/runs/7";
  fs::create_directories(run + "/003-w.checkpoint");
  for (const char* f : {"003-w.log", "003-w.progress.jsonl", "004-w.log"})
    std::ofstream(run + "/" + f) << "x";
  ASSERT_TRUE(remove_job_files(run + "/003-w.log", 1).ok());
  left.clear();
  for (const auto& e : fs::directory_iterator(run)) left.insert(e.path().filename());
  EXPECT_EQ(left, (std::set<std::string>{"004-w.log"}));
  EXPECT_FALSE(remove_job_files(templ + "/notajob.log", 1).ok());
  fs::remove_all(templ);
  EXPECT_EQ(attempt_log_path("/d/3-x", 1), "/d/3-x.log");
  EXPECT_EQ(attempt_log_path("/d/3-x", 3), "/d/3-x.attempt3.log");
  EXPECT_EQ(attempt_progress_path("/d/3-x", 2), "/d/3-x.attempt2.progress.jsonl");
}

}  // namespace
}  // namespace colo
