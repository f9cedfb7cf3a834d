#include "profiling/windows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace colo {
namespace {

using ::testing::HasSubstr;

constexpr const char* kSummary = R"({"tool": "torch", "window": 2, "trigger": "job file",
  "started": 100.0, "ended": 100.5, "steps": 5, "samples": 2560, "rate_in": 5120.0,
  "rate_before": 6400.0, "trace": "torch-trace-2.json", "sorted_by": "self_cpu_us",
  "top": [{"name": "aten::addmm", "calls": 10, "self_cpu_us": 3000, "self_device_us": 0},
          {"name": "aten::mm", "calls": 15, "self_cpu_us": 1000, "self_device_us": 0}]})";

TEST(ProfileWindows, ASummaryIsReadAndShownWithTheCostOfProfiling) {
  Result<ProfileWindow> w = parse_profile_window(kSummary, "/p");
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(w->window, 2);
  EXPECT_DOUBLE_EQ(w->seconds, 0.5);
  EXPECT_EQ(w->trace_path, "/p/torch-trace-2.json");
  ASSERT_EQ(w->top.size(), 2u);
  EXPECT_EQ(w->top[0].name, "aten::addmm");
  EXPECT_DOUBLE_EQ(w->top[0].self_us, 3000);
  const std::string shown = format_profile_windows({{"tiny", {*w}}});
  EXPECT_THAT(shown, HasSubstr("tiny window 2 (job file): 0.50s, 5 steps, 5120 samples/s inside "
                               "against 6400 before it (inside/before 0.80x: below 1 is what "
                               "profiling cost)"));
  // The rate after the window, where known, is the one compared.
  std::string with_after = kSummary;
  with_after.insert(with_after.find("\"rate_before\""), "\"rate_after\": 10240.0, ");
  Result<ProfileWindow> after = parse_profile_window(with_after, "/p");
  ASSERT_TRUE(after.ok()) << after.error().message();
  EXPECT_THAT(format_profile_windows({{"tiny", {*after}}}),
              HasSubstr("5120 samples/s inside against 10240 after it (inside/after 0.50x"));
  // A window the job's end closed says so.
  std::string at_exit = kSummary;
  at_exit.insert(at_exit.find("\"rate_before\""), "\"closed_by\": \"job end\", ");
  Result<ProfileWindow> cut = parse_profile_window(at_exit, "/p");
  ASSERT_TRUE(cut.ok()) << cut.error().message();
  EXPECT_EQ(cut->closed_by, "job end");
  EXPECT_THAT(format_profile_windows({{"tiny", {*cut}}}),
              HasSubstr("tiny window 2 (job file, closed by the job's end): 0.50s"));
  EXPECT_EQ(profile_windows_json({{"tiny", {*cut}}})["tiny"][0]["closed_by"], "job end");
  // A window of steps that saw none says how long it waited.
  std::string no_step = kSummary;
  no_step.insert(no_step.find("\"rate_before\""),
                 "\"closed_by\": \"no step\", \"no_step_bound_s\": 5.0, ");
  Result<ProfileWindow> waited = parse_profile_window(no_step, "/p");
  ASSERT_TRUE(waited.ok()) << waited.error().message();
  EXPECT_THAT(format_profile_windows({{"tiny", {*waited}}}),
              HasSubstr("tiny window 2 (job file, closed after 5.0s without a step)"));
  // One in a job that never reported a step counted its model's forwards.
  std::string by_forwards = kSummary;
  by_forwards.insert(by_forwards.find("\"rate_before\""),
                     "\"closed_by\": \"forwards\", \"forwards\": 10, ");
  Result<ProfileWindow> counted = parse_profile_window(by_forwards, "/p");
  ASSERT_TRUE(counted.ok()) << counted.error().message();
  EXPECT_THAT(
      format_profile_windows({{"tiny", {*counted}}}),
      HasSubstr("tiny window 2 (job file, closed after 10 forward passes (the job reports no "
                "steps))"));
  EXPECT_THAT(shown, HasSubstr("3.000 ms  75.0%      10 calls  aten::addmm"));
  EXPECT_THAT(shown, HasSubstr("self CPU time of its operators"));
  EXPECT_EQ(format_profile_windows({{"none", {}}}), "");
  EXPECT_FALSE(parse_profile_window("[]", "/p").ok());
  EXPECT_FALSE(parse_profile_window(R"({"top": []})", "/p").ok());
}

TEST(ProfileWindows, ADirectoryGivesItsWindowsInOrderAndNamesWhatDoesNotParse) {
  char tmpl[] = "/tmp/colo-profiling-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::string second = kSummary;
  std::ofstream(dir + "/torch-summary-2.json") << second;
  nlohmann::json first = nlohmann::json::parse(kSummary);
  first["window"] = 1;
  std::ofstream(dir + "/torch-summary-1.json") << first.dump();
  std::ofstream(dir + "/torch-summary-3.json") << "{not json";
  std::ofstream(dir + "/torch-trace-1.json") << "[]";
  std::vector<std::string> problems;
  std::vector<ProfileWindow> windows = read_profile_windows(dir, &problems);
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0].window, 1);
  EXPECT_EQ(windows[1].window, 2);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("torch-summary-3.json"));
  EXPECT_TRUE(read_profile_windows(dir + "/missing", nullptr).empty());

  // A request for a window: request.json, whole.
  ASSERT_TRUE(request_profile_window(dir + "/new", 2.5, std::nullopt).ok());
  std::ifstream in(dir + "/new/request.json");
  const nlohmann::json request = nlohmann::json::parse(in);
  EXPECT_EQ(request["tool"], "torch");
  EXPECT_EQ(request["duration_s"], 2.5);
  EXPECT_FALSE(request.contains("steps"));
  std::filesystem::remove_all(dir);
}

// Finding 4 of issue 53: a summary linked to /dev/zero was read without
// bound (by the service, as root, at every poll of the job's page).
TEST(ProfileWindows, ASummaryThatIsALinkAFifoOrTooLargeIsLeftOutAndNamed) {
  char tmpl[] = "/tmp/colo-profiling-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  nlohmann::json whole = nlohmann::json::parse(kSummary);
  whole["window"] = 1;
  std::ofstream(dir + "/torch-summary-1.json") << whole.dump();
  std::filesystem::create_symlink("/dev/zero", dir + "/torch-summary-2.json");
  ASSERT_EQ(::mkfifo((dir + "/torch-summary-3.json").c_str(), 0600), 0);
  std::ofstream(dir + "/torch-summary-4.json") << "{";
  std::filesystem::resize_file(dir + "/torch-summary-4.json", kMaxProfileSummaryBytes + 1);
  std::vector<std::string> problems;
  std::vector<ProfileWindow> windows = read_profile_windows(dir, &problems);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].window, 1);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_THAT(problems[0], HasSubstr(dir + "/torch-summary-2.json is a symbolic link"));
  EXPECT_THAT(problems[1], HasSubstr(dir + "/torch-summary-3.json is a FIFO, not a regular file"));
  EXPECT_THAT(problems[2], HasSubstr(dir + "/torch-summary-4.json holds 1.0 MiB, more than the "
                                           "1.0 MiB colo reads of it"));
  std::filesystem::remove_all(dir);
}

// Finding 3 of issue 53: the job planted request.json.tmp as a link to a
// root-only file, and `colo profile` (root) wrote the request into it. As
// root in the job's directory, the request is the job's user's file.
TEST(ProfileWindows, ARequestIsNeverWrittenThroughALinkTheJobPlanted) {
  char tmpl[] = "/tmp/colo-profiling-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string victim = dir + "/root-only";
  std::ofstream(victim) << "root's\n";
  const std::string job_dir = dir + "/profile";
  std::filesystem::create_directories(job_dir);
  std::filesystem::create_symlink(victim, job_dir + "/request.json.tmp");
  const bool root = ::geteuid() == 0;
  if (root) ASSERT_EQ(::chown(job_dir.c_str(), 54321, 54321), 0);
  ASSERT_TRUE(request_profile_window(job_dir, 10.0, std::nullopt).ok());
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "root's\n");
  EXPECT_FALSE(std::filesystem::is_symlink(job_dir + "/request.json"));
  std::ifstream request(job_dir + "/request.json");
  EXPECT_EQ(nlohmann::json::parse(request)["duration_s"], 10.0);
  if (root) {
    struct stat st {};
    ASSERT_EQ(::stat((job_dir + "/request.json").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 54321u) << "written as the job's user";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace colo
