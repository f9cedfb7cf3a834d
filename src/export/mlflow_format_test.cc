#include "export/mlflow_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <string>

namespace colo {
namespace {

TEST(YamlScalar, PlainOnlyWhereNothingElseCanBeReadIntoIt) {
  const struct {
    std::string text;
    std::string yaml;
  } cases[] = {
      {"active", "active"},
      {"alice", "alice"},
      {"file:///tmp/mlruns/12", "file:///tmp/mlruns/12"},
      {"/abs/path", "/abs/path"},
      {"e3b0c44298fc1c14", "e3b0c44298fc1c14"},
      // Numbers, booleans and null of YAML 1.1 stay strings.
      {"", "''"},
      {"123", "'123'"},
      {"0123abc", "'0123abc'"},
      {"1.5", "'1.5'"},
      {"1e3", "'1e3'"},
      {".inf", "'.inf'"},
      {"true", "'true'"},
      {"Yes", "'Yes'"},
      {"OFF", "'OFF'"},
      {"n", "'n'"},
      {"null", "'null'"},
      {"~", "'~'"},
      {"2026-11-26", "'2026-11-26'"},
      // Indicators and what YAML would read as structure.
      {"colo run 12: jobs.toml", "'colo run 12: jobs.toml'"},
      {"key:", "'key:'"},
      {"resnet26#1", "'resnet26#1'"},
      {"#comment", "'#comment'"},
      {"- item", "'- item'"},
      {"[a, b]", "'[a, b]'"},
      {"{a: b}", "'{a: b}'"},
      {"&anchor", "'&anchor'"},
      {"*alias", "'*alias'"},
      {"!tag", "'!tag'"},
      {"%directive", "'%directive'"},
      {"@at", "'@at'"},
      {"|", "'|'"},
      {">", "'>'"},
      {" padded ", "' padded '"},
      {"it's", "'it''s'"},
      {"say \"hi\"", "'say \"hi\"'"},
      {"back\\slash", "'back\\slash'"},
      {"caf\xC3\xA9", "'caf\xC3\xA9'"},
      // What a single-quoted scalar would fold, or YAML forbids raw.
      {"two\nlines", "\"two\\nlines\""},
      {"tab\there", "\"tab\\there\""},
      {"cr\r", "\"cr\\r\""},
      {"say \"hi\"\n", "\"say \\\"hi\\\"\\n\""},
      {"back\\slash\x01", "\"back\\\\slash\\x01\""},
      {"del\x7F", "\"del\\x7F\""},
      {"nel\xC2\x85", "\"nel\\x85\""},
      {"ls\xE2\x80\xA8", "\"ls\\u2028\""},
      {"bom\xEF\xBB\xBF", "\"bom\\uFEFF\""},
      // Not UTF-8: U+FFFD.
      {"\xFF", "'\xEF\xBF\xBD'"},
      {"a\xC3", "'a\xEF\xBF\xBD'"},
  };
  for (const auto& c : cases) EXPECT_EQ(yaml_scalar(c.text), c.yaml) << c.text;
}

TEST(ValidUtf8, ReplacesWhatIsNotUtf8) {
  EXPECT_EQ(valid_utf8("plain"), "plain");
  EXPECT_EQ(valid_utf8("caf\xC3\xA9 \xF0\x9F\x9A\x80"), "caf\xC3\xA9 \xF0\x9F\x9A\x80");
  EXPECT_EQ(valid_utf8("\x80"), "\xEF\xBF\xBD");                  // stray continuation
  EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80").substr(0, 3), "\xEF\xBF\xBD");         // > U+10FFFF
}

TEST(TruncateUtf8, NeverCutsACharacter) {
  EXPECT_EQ(truncate_utf8("abcdef", 4), "abcd");
  EXPECT_EQ(truncate_utf8("ab", 4), "ab");
  EXPECT_EQ(truncate_utf8("a\xC3\xA9", 2), "a");
  EXPECT_EQ(truncate_utf8("a\xC3\xA9", 3), "a\xC3\xA9");
}

TEST(MlflowKey, MakesNamesMlflowAccepts) {
  const struct {
    std::string name;
    std::string key;
  } cases[] = {
      {"loss", "loss"},
      {"val/acc", "val/acc"},
      {"batch size", "batch size"},
      {"lr-warmup_1.5", "lr-warmup_1.5"},
      {"loss@top-1", "loss_top-1"},
      {"x\ny", "x_y"},
      {"d\xC3\xAD"
       "a",
       "d_a"},  // one '_' per character, not per byte
      {"a//b/", "a/b"},
      {"/abs", "abs"},
      {"a/./b", "a/_/b"},
      {"a/../b", "a/__/b"},
      {"..x", "_.x"},
      {"..", "__"},
      {".", "_"},
      {"", "_"},
      {"///", "_"},
      {".hidden", ".hidden"},
  };
  for (const auto& c : cases) EXPECT_EQ(mlflow_key(c.name), c.key) << c.name;
  // MLflow's own rule (mlflow/utils/validation.py): these characters, and a
  // normalized relative path.
  const std::regex valid(R"(^[/\w.\- ]*$)");
  for (const auto& c : cases) EXPECT_TRUE(std::regex_match(mlflow_key(c.name), valid)) << c.name;
}

TEST(MlflowKey, CutsLongNamesAtMlflowsLimit) {
  EXPECT_EQ(mlflow_key(std::string(300, 'a')), std::string(250, 'a'));
  // A cut that ends on '/' leaves no trailing slash.
  EXPECT_EQ(mlflow_key(std::string(249, 'a') + "/" + std::string(10, 'b')), std::string(249, 'a'));
}

TEST(MlflowKeys, GivesEachNameItsOwnFile) {
  MlflowKeys keys;
  EXPECT_EQ(keys.key("a"), "a");
  EXPECT_EQ(keys.key("a/b"), "a_2/b");  // "a" is a file already
  EXPECT_EQ(keys.key("a"), "a");        // the same name, the same key
  EXPECT_EQ(keys.key("x/y"), "x/y");
  EXPECT_EQ(keys.key("x"), "x_2");  // "x" is a folder already
  EXPECT_EQ(keys.key("l@1"), "l_1");
  EXPECT_EQ(keys.key("l#1"), "l_1_2");  // both become l_1
  EXPECT_EQ(keys.key("l_1_2"), "l_1_2_2");
  // The same name from another source.
  EXPECT_EQ(keys.unique_key("a"), "a_3");
  EXPECT_EQ(keys.key("a"), "a");
}

TEST(MlflowMetricValue, WritesFloatsAsPythonsRepr) {
  EXPECT_EQ(mlflow_metric_value(1.0), "1.0");
  EXPECT_EQ(mlflow_metric_value(0.25), "0.25");
  EXPECT_EQ(mlflow_metric_value(-3.0), "-3.0");
  EXPECT_EQ(mlflow_metric_value(123456.0), "123456.0");
  EXPECT_EQ(mlflow_metric_value(0.1), "0.1");
  EXPECT_EQ(mlflow_metric_value(1e-5), "1e-05");
  EXPECT_EQ(mlflow_metric_value(1e16), "1e+16");
  EXPECT_EQ(mlflow_metric_value(2147.483648), "2147.483648");
  EXPECT_EQ(mlflow_metric_value(std::nan("")), "nan");
  EXPECT_EQ(mlflow_metric_value(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(mlflow_metric_value(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(MlflowMetricLine, IsTimestampValueStep) {
  EXPECT_EQ(mlflow_metric_line(1'700'000'000'123, 0.5, 7), "1700000000123 0.5 7\n");
  EXPECT_EQ(mlflow_metric_line(1'700'000'000'000, 2.0, 0), "1700000000000 2.0 0\n");
}

TEST(FileUri, PercentEncodesAsPathlibDoes) {
  EXPECT_EQ(file_uri("/tmp/mlruns/1"), "file:///tmp/mlruns/1");
  EXPECT_EQ(file_uri("/a/~b_c.d-e"), "file:///a/~b_c.d-e");
  EXPECT_EQ(file_uri("/tmp/my runs/x#1%"), "file:///tmp/my%20runs/x%231%25");
  EXPECT_EQ(file_uri("/caf\xC3\xA9"), "file:///caf%C3%A9");
}

TEST(MlflowIds, AreDerivedFromTheirSource) {
  const std::string experiment = mlflow_experiment_id("colo run 12 started 1 on host");
  EXPECT_TRUE(std::regex_match(experiment, std::regex("[1-9][0-9]{17}"))) << experiment;
  EXPECT_EQ(mlflow_experiment_id("colo run 12 started 1 on host"), experiment);
  EXPECT_NE(mlflow_experiment_id("colo run 13 started 1 on host"), experiment);
  const std::string run = mlflow_run_id("x job 1");
  EXPECT_TRUE(std::regex_match(run, std::regex("[0-9a-f]{32}"))) << run;
  EXPECT_EQ(mlflow_run_id("x job 1"), run);
  EXPECT_NE(mlflow_run_id("x job 2"), run);
}

TEST(MlflowStatus, MapsEveryJobState) {
  const struct {
    JobState state;
    int status;
  } cases[] = {
      {JobState::kQueued, 2},    {JobState::kRunning, 1},     {JobState::kOk, 3},
      {JobState::kFailed, 4},    {JobState::kOutOfMemory, 4}, {JobState::kKilled, 5},
      {JobState::kCancelled, 5}, {JobState::kInterrupted, 5},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(static_cast<int>(mlflow_status(c.state)), c.status) << to_string(c.state);
  }
}

TEST(MlflowMeta, ExperimentAsMlflowWritesIt) {
  MlflowExperimentMeta meta;
  meta.experiment_id = "123456789012345678";
  meta.name = "colo run 12: jobs.toml";
  meta.artifact_location = "file:///tmp/mlruns/123456789012345678";
  meta.creation_time_ms = 1'700'000'000'000;
  meta.last_update_time_ms = 1'700'000'100'000;
  EXPECT_EQ(mlflow_experiment_meta(meta),
            "artifact_location: file:///tmp/mlruns/123456789012345678\n"
            "creation_time: 1700000000000\n"
            "experiment_id: '123456789012345678'\n"
            "last_update_time: 1700000100000\n"
            "lifecycle_stage: active\n"
            "name: 'colo run 12: jobs.toml'\n");
}

TEST(MlflowMeta, RunAsMlflowWritesItOnceEnded) {
  MlflowRunMeta meta;
  meta.run_id = "0123456789abcdef0123456789abcdef";
  meta.experiment_id = "123456789012345678";
  meta.run_name = "resnet26#1";
  meta.artifact_uri =
      "file:///tmp/mlruns/123456789012345678/0123456789abcdef0123456789abcdef/artifacts";
  meta.user_id = "alice";
  meta.status = MlflowRunStatus::kFinished;
  meta.start_time_ms = 1'700'000'000'000;
  meta.end_time_ms = 1'700'000'060'000;
  EXPECT_EQ(mlflow_run_meta(meta),
            "artifact_uri: "
            "file:///tmp/mlruns/123456789012345678/0123456789abcdef0123456789abcdef/artifacts\n"
            "end_time: 1700000060000\n"
            "entry_point_name: ''\n"
            "experiment_id: '123456789012345678'\n"
            "lifecycle_stage: active\n"
            "run_id: '0123456789abcdef0123456789abcdef'\n"
            "run_name: 'resnet26#1'\n"
            "run_uuid: '0123456789abcdef0123456789abcdef'\n"
            "source_name: ''\n"
            "source_type: 4\n"
            "source_version: ''\n"
            "start_time: 1700000000000\n"
            "status: 3\n"
            "tags: []\n"
            "user_id: alice\n");
  meta.end_time_ms.reset();
  meta.status = MlflowRunStatus::kRunning;
  meta.user_id = "";
  const std::string running = mlflow_run_meta(meta);
  EXPECT_NE(running.find("end_time: null\n"), std::string::npos) << running;
  EXPECT_NE(running.find("status: 1\n"), std::string::npos) << running;
  EXPECT_NE(running.find("user_id: ''\n"), std::string::npos) << running;
}

}  // namespace
}  // namespace colo
