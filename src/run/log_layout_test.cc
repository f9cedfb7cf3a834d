#include "run/log_layout.h"

#include <gtest/gtest.h>

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
  }
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

}  // namespace
}  // namespace colo
