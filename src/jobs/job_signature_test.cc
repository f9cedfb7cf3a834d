#include "jobs/job_signature.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace colo {
namespace {

JobSpec make_job(const std::string& name, std::vector<std::string> command,
                 std::map<std::string, std::string> env = {}) {
  JobSpec job;
  job.name = name;
  job.command = std::move(command);
  job.working_dir = "/work";
  job.env = std::move(env);
  return job;
}

TEST(SignatureTest, DependsOnCommandDirectoryAndEnvironmentOnly) {
  JobSpec a = make_job("a", {"python", "train.py", "--lr", "0.1"}, {{"X", "1"}, {"Y", "2"}});
  JobSpec renamed = a;
  renamed.name = "another name";
  renamed.sm_share_pct = 50;
  EXPECT_EQ(job_signature(a), job_signature(renamed));
  EXPECT_EQ(job_signature(a).size(), 16U);

  JobSpec other_env = a;
  other_env.env["Y"] = "3";
  EXPECT_NE(job_signature(a), job_signature(other_env));
  JobSpec other_dir = a;
  other_dir.working_dir = "/elsewhere";
  EXPECT_NE(job_signature(a), job_signature(other_dir));
  // Argument boundaries matter.
  EXPECT_NE(job_signature(make_job("x", {"ab", "c"})), job_signature(make_job("x", {"a", "bc"})));
}

TEST(SignatureTest, SignaturesOfJobsAreEachJobsInOrder) {
  const std::vector<JobSpec> jobs = {make_job("a", {"python", "a.py"}),
                                     make_job("b", {"python", "b.py"}),
                                     make_job("a again", {"python", "a.py"})};
  const std::vector<std::string> signatures = job_signatures(jobs);
  ASSERT_EQ(signatures.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(signatures[i], job_signature(jobs[i])) << i;
  EXPECT_EQ(signatures[0], signatures[2]);
  EXPECT_NE(signatures[0], signatures[1]);
  EXPECT_TRUE(job_signatures({}).empty());
}

TEST(SignatureTest, JobsSignatureIsAnOrderFreeMultiset) {
  EXPECT_EQ(jobs_signature({"a", "b", "c"}), jobs_signature({"c", "a", "b"}));
  EXPECT_NE(jobs_signature({"a", "a", "b"}), jobs_signature({"a", "b", "b"}));
  EXPECT_NE(jobs_signature({"a", "b"}), jobs_signature({"a", "b", "b"}));
}

}  // namespace
}  // namespace colo
