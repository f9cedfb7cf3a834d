#include "run/log_layout.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

// `colo run --resume` finds a job's checkpoint directory from the log of any
// of its attempts, in either layout; a path in neither gives "".
TEST(LogLayout, TheCheckpointDirectoryOfALogInEitherLayout) {
  const std::string run = run_logs_dir("/l", "/s/colo.db", 7);
  const std::string stem = run_job_stem(run, 2, "lr[lr=0.1]");
  EXPECT_EQ(checkpoint_dir_of_log(stem + ".log"), stem + ".checkpoint");
  EXPECT_EQ(checkpoint_dir_of_log(stem + ".attempt3.log"), stem + ".checkpoint");
  const std::string service = service_logs_dir("/l", "/s/colo.db");
  EXPECT_EQ(checkpoint_dir_of_log(service_job_stem(service, 42, "t") + ".log"),
            service_checkpoint_dir(service, 42));
  EXPECT_EQ(checkpoint_dir_of_log(service_job_stem(service, 42, "t") + ".attempt2.log"),
            service_checkpoint_dir(service, 42));
  EXPECT_EQ(checkpoint_dir_of_log("/somewhere/job.log"), "");
  EXPECT_EQ(checkpoint_dir_of_log("relative.log"), "");
  EXPECT_EQ(checkpoint_dir_of_log(stem + ".progress.jsonl"), "");
}

}  // namespace
}  // namespace colo
