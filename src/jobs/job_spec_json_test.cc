#include "jobs/job_spec_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>

namespace colo {
namespace {

using ::testing::HasSubstr;

JobSpec full_spec() {
  JobSpec job;
  job.name = "resnet[lr=0.1]#2";
  job.group = "resnet";
  job.command = {"python3", "train.py", "--lr", "0.1"};
  job.working_dir = "/data/exp";
  job.env = {{"A", "1"}, {"B_2", "two words"}};
  job.gpu_memory_bytes = 6ull << 30;
  job.sm_share_pct = 50;
  job.memory_limit_bytes = 8ull << 30;
  job.epoch_regex = "epoch (\\d+)";
  job.step_regex = "step (?P<step>\\d+)";
  job.epoch_samples = 50000;
  job.family = "0123456789abcdef";
  job.resource_params = std::vector<std::string>{"batch_size", "image_size^2"};
  job.sm_activity_pct = 40;
  job.gpu_util_pct = 70;
  job.solo_time_ms = 90'000;
  job.startup_time_ms = 12'000;
  job.mig_profile = "3g.40gb";
  job.mig_group = "pair";
  job.dataset = "imagenet";
  job.data_source = DataSourceSpec{
      "imagenet", "/data/imagenet", "imagefolder", 160, false,      6, uint64_t{512} << 20,
      32,         45'000,           "0-3",         7,   "submitted"};
  job.host_memory_bytes = uint64_t{16} << 30;
  job.cpus = 4;
  job.restart = RestartPolicy::kNever;
  job.qos = QosClass::kProtected;
  job.min_speed = 0.8;
  job.params = {{"lr", "0.1"}};
  job.repeat_index = 2;
  job.source = "jobs.toml:4";
  return job;
}

void expect_same(const JobSpec& a, const JobSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.working_dir, b.working_dir);
  EXPECT_EQ(a.env, b.env);
  EXPECT_EQ(a.gpu_memory_bytes, b.gpu_memory_bytes);
  EXPECT_EQ(a.sm_share_pct, b.sm_share_pct);
  EXPECT_EQ(a.memory_limit_bytes, b.memory_limit_bytes);
  EXPECT_EQ(a.epoch_regex, b.epoch_regex);
  EXPECT_EQ(a.step_regex, b.step_regex);
  EXPECT_EQ(a.epoch_samples, b.epoch_samples);
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.resource_params, b.resource_params);
  EXPECT_EQ(a.sm_activity_pct, b.sm_activity_pct);
  EXPECT_EQ(a.gpu_util_pct, b.gpu_util_pct);
  EXPECT_EQ(a.solo_time_ms, b.solo_time_ms);
  EXPECT_EQ(a.startup_time_ms, b.startup_time_ms);
  EXPECT_EQ(a.mig_profile, b.mig_profile);
  EXPECT_EQ(a.mig_group, b.mig_group);
  EXPECT_EQ(a.dataset, b.dataset);
  ASSERT_EQ(a.data_source.has_value(), b.data_source.has_value());
  if (a.data_source) {
    const DataSourceSpec& x = *a.data_source;
    const DataSourceSpec& y = *b.data_source;
    EXPECT_EQ(std::tie(x.name, x.path, x.format, x.image_size, x.augment, x.threads, x.ring_bytes,
                       x.chunk, x.lag_timeout_ms, x.cpus, x.seed),
              std::tie(y.name, y.path, y.format, y.image_size, y.augment, y.threads, y.ring_bytes,
                       y.chunk, y.lag_timeout_ms, y.cpus, y.seed));
  }
  EXPECT_EQ(a.host_memory_bytes, b.host_memory_bytes);
  EXPECT_EQ(a.cpus, b.cpus);
  EXPECT_EQ(a.restart, b.restart);
  EXPECT_EQ(a.qos, b.qos);
  EXPECT_EQ(a.min_speed, b.min_speed);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.repeat_index, b.repeat_index);
  EXPECT_EQ(a.source, b.source);
}

TEST(JobSpecJson, EveryFieldRoundTrips) {
  const JobSpec job = full_spec();
  Result<JobSpec> back = job_spec_from_json(nlohmann::json::parse(job_spec_to_json(job).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message();
  expect_same(job, *back);
}

// What a store keeps: the spec's one shape, only secret values redacted.
TEST(JobSpecJson, TheStoredShapeRedactsOnlySecretValues) {
  struct Case {
    std::map<std::string, std::string> env;
    std::map<std::string, std::string> stored;
  };
  const std::vector<Case> cases = {
      {{}, {}},
      {{{"PATH", "/bin"}}, {{"PATH", "/bin"}}},
      {{{"PATH", "/bin"}, {"API_TOKEN", "t0k"}}, {{"PATH", "/bin"}, {"API_TOKEN", "<redacted>"}}},
  };
  for (const Case& c : cases) {
    JobSpec job = full_spec();
    job.env = c.env;
    nlohmann::json want = job_spec_to_json(job);
    want["env"] = c.stored;
    EXPECT_EQ(job_spec_to_stored_json(job), want) << nlohmann::json(c.env).dump();
  }
}

// Issue 33 (15): a reader of --json gets numbers and booleans as such.
TEST(JobSpecJson, ParametersAreNumbersBooleansOrText) {
  EXPECT_EQ(param_to_json("0.1"), nlohmann::json(0.1));
  EXPECT_EQ(param_to_json("64"), nlohmann::json(64));
  EXPECT_TRUE(param_to_json("64").is_number_integer());
  EXPECT_EQ(param_to_json("-3e-4"), nlohmann::json(-3e-4));
  EXPECT_EQ(param_to_json("true"), nlohmann::json(true));
  EXPECT_EQ(param_to_json("adam"), nlohmann::json("adam"));
  EXPECT_EQ(param_to_json("0.1x"), nlohmann::json("0.1x"));
  EXPECT_EQ(param_to_json("nan"), nlohmann::json("nan"));
  EXPECT_EQ(param_to_json(""), nlohmann::json(""));
  EXPECT_EQ(params_to_json({{"bs", "32"}, {"opt", "sgd"}}),
            nlohmann::json({{"bs", 32}, {"opt", "sgd"}}));
}

TEST(JobSpecJson, UnsetOptionalsStayUnset) {
  JobSpec job;
  job.name = "a";
  job.command = {"x"};
  job.working_dir = "/";
  Result<JobSpec> back = job_spec_from_json(job_spec_to_json(job));
  ASSERT_TRUE(back.ok()) << back.error().message();
  expect_same(job, *back);
  EXPECT_EQ(back->group, "");
  EXPECT_EQ(back->restart, RestartPolicy::kOnFailure);
}

// Issue 56: only a protected job's floor is written; readers of stored specs
// find the class without a JobSpec, and cheaply when the spec is normal.
TEST(JobSpecJson, QosIsWrittenOnlyWhenNotNormalAndReadBackFromStoredText) {
  struct Case {
    QosClass qos;
    double min_speed;
    bool names_qos, names_floor;
  };
  for (const Case& c : {Case{QosClass::kNormal, kDefaultMinSpeed, false, false},
                        Case{QosClass::kOpportunistic, kDefaultMinSpeed, true, false},
                        Case{QosClass::kProtected, 0.85, true, true}}) {
    JobSpec job = full_spec();
    job.qos = c.qos;
    job.min_speed = c.min_speed;
    const nlohmann::json j = job_spec_to_stored_json(job);
    EXPECT_EQ(j.contains("qos"), c.names_qos) << to_string(c.qos);
    EXPECT_EQ(j.contains("min_speed"), c.names_floor) << to_string(c.qos);
    const SpecQos read = qos_of_spec_text(j.dump());
    EXPECT_EQ(read.qos, c.qos);
    EXPECT_EQ(read.min_speed, c.min_speed);
  }
  EXPECT_EQ(qos_of_spec_text("not json, \"qos\"").qos, QosClass::kNormal);
  EXPECT_EQ(qos_of_spec_text(R"({"qos":"platinum"})").qos, QosClass::kNormal);
}

struct BadJson {
  const char* label;
  const char* json;
  const char* expected;
};

class JobSpecJsonBad : public ::testing::TestWithParam<BadJson> {};

TEST_P(JobSpecJsonBad, SaysWhichFieldIsWrong) {
  Result<JobSpec> r = job_spec_from_json(nlohmann::json::parse(GetParam().json));
  ASSERT_FALSE(r.ok()) << GetParam().label;
  EXPECT_THAT(r.error().message(), HasSubstr(GetParam().expected)) << GetParam().label;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, JobSpecJsonBad,
    ::testing::Values(
        BadJson{"not an object", "[1]", "must be a JSON object"},
        BadJson{"no name", R"({"command":["x"],"working_dir":"/"})", "'name' is missing"},
        BadJson{"unknown qos", R"({"name":"a","command":["x"],"working_dir":"/","qos":"gold"})",
                "'qos' must be \"protected\", \"normal\" or \"opportunistic\""},
        BadJson{"floor above one",
                R"({"name":"a","command":["x"],"working_dir":"/","qos":"protected","min_speed":2})",
                "'min_speed' must be a number above 0 and at most 1"},
        BadJson{"floor of a normal job",
                R"({"name":"a","command":["x"],"working_dir":"/","min_speed":0.9})",
                "'min_speed' is the floor of a protected job"},
        BadJson{"empty command", R"({"name":"a","command":[],"working_dir":"/"})",
                "'command' must be a non-empty array"},
        BadJson{"relative dir", R"({"name":"a","command":["x"],"working_dir":"rel"})",
                "'working_dir' must be an absolute path"},
        BadJson{"bad env name",
                R"({"name":"a","command":["x"],"working_dir":"/","env":{"1X":"v"}})",
                "'1X' is not a valid name"},
        BadJson{"share out of range",
                R"({"name":"a","command":["x"],"working_dir":"/","sm_share_pct":101})",
                "'sm_share_pct' must be an integer from 1 to 100"},
        BadJson{"negative memory",
                R"({"name":"a","command":["x"],"working_dir":"/","gpu_memory_bytes":-1})",
                "'gpu_memory_bytes' must be a number of bytes"},
        BadJson{"bad restart",
                R"({"name":"a","command":["x"],"working_dir":"/","restart":"always"})",
                "'restart' must be"},
        // What every user's queue shows, and what runs: control characters refused.
        BadJson{"escape in the program",
                R"({"name":"a","command":["x\u001b[2J"],"working_dir":"/"})",
                "'command[0]' holds a control character (byte 1, 0x1b); remove it"},
        BadJson{"carriage return in the directory",
                R"({"name":"a","command":["x"],"working_dir":"/tmp\rroot"})",
                "'working_dir' holds a control character (byte 4, 0x0d)"},
        BadJson{"bell in a regex",
                R"({"name":"a","command":["x"],"working_dir":"/","epoch_regex":"e\u0007"})",
                "'epoch_regex' holds a control character (byte 1, 0x07)"},
        BadJson{"C1 control in a param",
                R"({"name":"a","command":["x"],"working_dir":"/","params":{"lr":"1\u009b"}})",
                "'params.lr' holds a control character (byte 1, 0xc2)"}),
    [](const ::testing::TestParamInfo<BadJson>& info) {
      std::string name = info.param.label;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace colo
