#include "serve/snapshot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace colo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr UnixMillis kNow = 1'700'000'100'000;

ServiceSnapshot example() {
  ServiceSnapshot s;
  s.time_ms = kNow;
  s.service = {4242,
               "root",
               "box",
               kNow - 60'000,
               "sim",
               true,
               "mps",
               "auto",
               7,
               "running",
               "",
               "/var/lib/colo/colo.db",
               "127.0.0.1:8470",
               "shared"};
  DeviceSample d;
  d.device = 0;
  d.time_ms = kNow - 500;
  d.sm_active_pct = 45.5;
  d.memory_used_bytes = 30ull << 30;
  d.energy_mj = 123456;
  s.gpus.push_back({0, "NVIDIA H200", "GPU-0", 141ull << 30, 1, d, 700.0});
  s.gpus.push_back({1, "NVIDIA H200", "GPU-1", 141ull << 30, 0, std::nullopt, std::nullopt});
  QueueJob running;
  running.id = 12;
  running.name = "resnet26#1";
  running.group = "resnet26";
  running.owner = "alice";
  running.owner_uid = 1000;
  running.state = "running";
  running.gpu = 0;
  running.mechanism = "mps";
  running.attempts = 2;
  running.epoch = 3;
  running.samples_per_s = 12345.6;
  running.predicted_end_ms = kNow + 250'000;
  running.submitted_ms = kNow - 50'000;
  running.started_ms = kNow - 40'000;
  running.job_file = "/home/alice/jobs.toml";
  running.run_id = 7;
  running.pid = 31337;
  running.mps_sm_share_pct = 50;
  running.mps_memory_limit_bytes = 20ull << 30;
  running.solo_samples_per_s = 24691.2;
  running.submission_id = 3;
  running.submission_run_id = 7;
  running.submission_name = "lr-a";
  QueueJob queued = running;
  queued.id = 13;
  queued.name = "vit";
  queued.state = "queued";
  queued.gpu.reset();
  queued.epoch.reset();
  queued.samples_per_s.reset();
  queued.predicted_end_ms.reset();
  queued.started_ms.reset();
  queued.attempts = 0;
  queued.submission_id = 5;
  queued.submission_name = "";
  QueueJob ended = queued;
  ended.id = 9;
  ended.state = "failed";
  ended.reason = "exit code 1";
  ended.ended_ms = kNow - 5'000;
  s.jobs = {running, queued, ended};
  s.samples = {d};
  s.runs.push_back({7, "running", kNow - 60'000, std::nullopt, "mps", "", 3});
  s.processes.push_back({0, 31337, 12, 9ull << 30, std::nullopt, true, "alice", "python3"});
  s.processes.push_back({0, 4000, std::nullopt, 1ull << 30, 12.5, false, "", ""});
  return s;
}

TEST(Snapshot, JsonRoundTripsEveryField) {
  const ServiceSnapshot s = example();
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["version"], kSnapshotVersion);
  EXPECT_TRUE(j["gpus"][1]["latest"].is_null());
  EXPECT_TRUE(j["jobs"][1]["gpu"].is_null());
  EXPECT_EQ(j["service"]["http"], "127.0.0.1:8470");
  EXPECT_EQ(j["service"]["mps_users"], "shared");
  Result<ServiceSnapshot> back = snapshot_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(to_json(*back), j) << "one serialization, read back unchanged";
  EXPECT_EQ(j["jobs"][0]["slowdown"], 2.0);
  EXPECT_EQ(j["processes"][0]["job"], 12);
  EXPECT_TRUE(j["processes"][1]["job"].is_null());
  EXPECT_EQ(j["jobs"][0]["submission_id"], 3);
  EXPECT_EQ(j["jobs"][0]["submission_run_id"], 7);
  EXPECT_EQ(j["jobs"][0]["submission_name"], "lr-a");
  EXPECT_EQ(j["jobs"][1]["submission_name"], "");
  EXPECT_EQ(back->jobs[0].submission_id, 3);
  EXPECT_EQ(back->jobs[0].submission_run_id, 7);
  EXPECT_EQ(back->jobs[0].submission_name, "lr-a");
  EXPECT_EQ(back->jobs[1].submission_id, 5);
  // Names that no two submissions share are listed as they are.
  EXPECT_EQ(j["jobs"][0]["listed_name"], "resnet26#1");
  EXPECT_EQ(j["jobs"][2]["listed_name"], "vit") << "one submission's, twice";
  nlohmann::json older = j;
  for (nlohmann::json& job : older["jobs"]) {
    job.erase("submission_id");
    job.erase("submission_run_id");
    job.erase("submission_name");
  }
  Result<ServiceSnapshot> old_service = snapshot_from_json(older);
  ASSERT_TRUE(old_service.ok()) << "a service from before submissions were listed";
  EXPECT_FALSE(old_service->jobs[0].submission_id);
  EXPECT_EQ(old_service->jobs[0].submission_name, "");
}

// Issue 58, item 14: `sw[lr=0.2]` submitted twice read the same twice in
// colo queue and the dashboard. Where two submissions' jobs share a name,
// each is listed after its submission's title, as a service run's report
// names them; other names, and a job of no known submission, stay as they are.
TEST(Snapshot, TwoSubmissionsJobsOfOneNameAreListedByTheirSubmission) {
  ServiceSnapshot s = example();
  QueueJob again = s.jobs[0];  // resnet26#1 of submission 7/3 "lr-a"
  again.id = 20;
  again.submission_id = 5;
  again.submission_name = "";
  again.state = "queued";
  again.gpu.reset();
  QueueJob unknown = again;  // stored before submissions were
  unknown.id = 21;
  unknown.submission_id.reset();
  unknown.submission_run_id.reset();
  QueueJob elsewhere = again;  // a submission whose run is not recorded
  elsewhere.id = 22;
  elsewhere.submission_id = 6;
  elsewhere.submission_run_id.reset();
  s.jobs = {s.jobs[0], again, s.jobs[1], s.jobs[2], unknown, elsewhere};
  const std::vector<std::string> names = listed_names(s.jobs);
  EXPECT_EQ(names, (std::vector<std::string>{"#7/3 lr-a: resnet26#1", "#7/5: resnet26#1", "vit",
                                             "vit", "resnet26#1", "submission 6: resnet26#1"}));
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["jobs"][0]["listed_name"], "#7/3 lr-a: resnet26#1");
  EXPECT_EQ(j["jobs"][1]["listed_name"], "#7/5: resnet26#1");
  EXPECT_EQ(j["jobs"][2]["listed_name"], "vit");
  Result<ServiceSnapshot> back = snapshot_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(to_json(*back), j) << "derived, and derived again the same";
  const std::string text = format_queue(s, kNow);
  EXPECT_THAT(text, HasSubstr(" #7/3 lr-a: resnet26#1\n")) << text;
  EXPECT_THAT(text, HasSubstr(" #7/5: resnet26#1\n"));
  EXPECT_THAT(text, HasSubstr(" resnet26#1\n"));
  EXPECT_THAT(text, HasSubstr(" submission 6: resnet26#1\n"));
  EXPECT_THAT(text, HasSubstr(" vit\n"));
  EXPECT_THAT(text, Not(HasSubstr(": vit")));
}

// A running job found stalled reads "stalled" (with why) while colo stops
// it; one running alone outside the shared MPS server is marked so.
TEST(Snapshot, AStalledJobShowsAsStalledAndAJobRunOutsideMpsAsAlone) {
  ServiceSnapshot s = example();
  s.jobs[0].stalled = "stalled: no progress for 74 s after epoch 2";
  s.jobs[1].outside_mps = true;
  EXPECT_EQ(shown_state(s.jobs[0]), "stalled");
  EXPECT_EQ(shown_state(s.jobs[1]), "queued");
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["jobs"][0]["state"], "running");
  EXPECT_EQ(j["jobs"][0]["stalled"], "stalled: no progress for 74 s after epoch 2");
  EXPECT_TRUE(j["jobs"][2]["stalled"].is_null());
  Result<ServiceSnapshot> back = snapshot_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->jobs[0].stalled, s.jobs[0].stalled);
  EXPECT_TRUE(back->jobs[1].outside_mps);
  const std::string text = format_queue(s, kNow);
  EXPECT_THAT(text, HasSubstr("stalled#2"));
  EXPECT_THAT(text, HasSubstr("resnet26#1: stalled: no progress for 74 s after epoch 2"));
  EXPECT_THAT(text, HasSubstr("vit (alone)"));
}

// Issue 56: each job's class, and a protected job's floor, as colo queue
// shows them; a normal job's line is as before.
TEST(Snapshot, AJobsClassAndFloorShowWhereItIsNotNormal) {
  ServiceSnapshot s = example();
  s.jobs[0].qos = "protected";
  s.jobs[0].min_speed = 0.9;
  s.jobs[1].qos = "opportunistic";
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["jobs"][0]["qos"], "protected");
  EXPECT_EQ(j["jobs"][0]["min_speed"], 0.9);
  EXPECT_EQ(j["jobs"][1]["qos"], "opportunistic");
  EXPECT_TRUE(j["jobs"][1]["min_speed"].is_null());
  EXPECT_EQ(j["jobs"][2]["qos"], "normal");
  Result<ServiceSnapshot> back = snapshot_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->jobs[0].min_speed, 0.9);
  EXPECT_EQ(back->jobs[1].qos, "opportunistic");
  const std::string text = format_queue(s, kNow);
  EXPECT_THAT(text, HasSubstr("(protected 0.90)"));
  EXPECT_THAT(text, HasSubstr("(opportunistic)"));
  EXPECT_THAT(text, Not(HasSubstr("(normal")));
}

// Issue 56, items 4 and 6: a protected job against its floor (its latest
// speed of solo, its share of steady time below the floor) in the JSON, in
// colo queue's line and in the marker colo top and the dashboard show; an
// opportunistic job stopped for a floor says so while it waits.
TEST(Snapshot, AProtectedJobsSpeedOfSoloAndTimeBelowItsFloorShow) {
  ServiceSnapshot s = example();
  QueueJob& main = s.jobs[0];
  main.qos = "protected";
  main.min_speed = 0.9;
  main.speed_of_solo = 0.84;
  main.below_floor_share = 0.12;
  main.steady_ms = 100'000;
  main.below_floor_ms = 12'000;
  QueueJob& side = s.jobs[1];
  side.qos = "opportunistic";
  side.reason =
      "stopped for job 12's floor 0.90: it ran at 0.84 beside this job; it runs again, from its "
      "checkpoint if it saved one (not counted as an attempt)";
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["jobs"][0]["speed_of_solo"], 0.84);
  EXPECT_EQ(j["jobs"][0]["below_floor_share"], 0.12);
  EXPECT_EQ(j["jobs"][0]["steady_ms"], 100'000);
  EXPECT_EQ(j["jobs"][0]["below_floor_ms"], 12'000);
  for (const char* key : {"speed_of_solo", "below_floor_share", "steady_ms", "below_floor_ms"})
    EXPECT_TRUE(j["jobs"][1][key].is_null()) << key;
  Result<ServiceSnapshot> back = snapshot_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(to_json(*back), j);
  const std::string text = format_queue(s, kNow);
  EXPECT_THAT(text, HasSubstr("(protected 0.90, at 0.84, 12% below)"));
  EXPECT_THAT(text, HasSubstr("(opportunistic): stopped for job 12's floor 0.90: it ran at 0.84 "
                              "beside this job"));

  struct Marker {
    std::string qos;
    std::optional<double> min_speed, speed, below;
    std::string want;
  };
  for (const Marker& m : std::vector<Marker>{
           {"normal", std::nullopt, std::nullopt, std::nullopt, ""},
           {"opportunistic", std::nullopt, std::nullopt, std::nullopt, "opp"},
           {"protected", 0.9, std::nullopt, std::nullopt, "P 0.90"},
           {"protected", 0.9, 0.94, 0.0, "P 0.90|0.94"},
           {"protected", 0.9, 0.84, 0.12, "P 0.90|0.84 12%"},
           {"protected", 0.85, 0.84, 0.001, "P 0.85|0.84 <1%"},
       }) {
    QueueJob q;
    q.qos = m.qos;
    q.min_speed = m.min_speed;
    q.speed_of_solo = m.speed;
    q.below_floor_share = m.below;
    EXPECT_EQ(qos_marker(q), m.want) << m.want;
  }
}

TEST(Snapshot, SlowdownIsTheSoloRateOverTheCurrentOneWhenBothAreKnown) {
  QueueJob j;
  EXPECT_FALSE(slowdown(j));
  j.samples_per_s = 500;
  EXPECT_FALSE(slowdown(j));
  j.solo_samples_per_s = 1500;
  EXPECT_DOUBLE_EQ(*slowdown(j), 3.0);
  j.samples_per_s = 0;
  EXPECT_FALSE(slowdown(j)) << "no progress is no rate, not an infinite slowdown";
}

TEST(Snapshot, ASnapshotWithoutProcessesFromAnOlderServiceIsRead) {
  nlohmann::json j = to_json(example());
  j.erase("processes");
  Result<ServiceSnapshot> back = snapshot_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_TRUE(back->processes.empty());
}

TEST(Snapshot, AnotherVersionIsRefusedWithWhatToDo) {
  nlohmann::json j = to_json(example());
  j["version"] = kSnapshotVersion + 1;
  Result<ServiceSnapshot> back = snapshot_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_THAT(back.error().message(), HasSubstr("use the colo binary of the service"));
}

TEST(Snapshot, QueueTextShowsJobsPerGpuThenTheQueueThenEnded) {
  std::string text = format_queue(example(), kNow);
  EXPECT_THAT(text, HasSubstr("colo serve, pid 4242 on box as root: mps, policy auto, 2 GPUs "
                              "(SIMULATED); 1 running, 1 queued"));
  EXPECT_THAT(text, HasSubstr("gpu0  NVIDIA H200  1 running, SM 46%, memory 30.0 GiB"));
  EXPECT_THAT(text, HasSubstr("12     alice      running#2   mps           3   12.3k/s  in 4m10s"));
  const size_t gpu1 = text.find("gpu1");
  const size_t queued = text.find("queued (1)");
  const size_t ended = text.find("recently ended");
  ASSERT_NE(gpu1, std::string::npos);
  ASSERT_NE(queued, std::string::npos);
  ASSERT_NE(ended, std::string::npos);
  EXPECT_LT(gpu1, queued);
  EXPECT_LT(queued, ended);
  EXPECT_THAT(text, HasSubstr("vit: exit code 1"));
  EXPECT_THAT(text, HasSubstr("5.0s ago"));
}

// colo usage --by group: each user's figures summed in their group; the
// sums equal the users' (nothing lost or counted twice), a group has no
// weight, and the table and CSV name the column GROUP / group.
// What the HTTP API shows of a job the snapshot no longer holds: the
// store's row, none of an attempt's live values.
TEST(Snapshot, AStoredJobBecomesAQueueJobWithoutLiveValues) {
  struct Case {
    JobState state;
    std::optional<int> device;
    std::string shown;
  };
  const std::vector<Case> cases = {
      {JobState::kQueued, std::nullopt, "queued"},
      {JobState::kRunning, 1, "running"},
      {JobState::kOk, 0, "ok"},
  };
  for (const Case& c : cases) {
    ServiceJobRow row;
    row.id = 7;
    row.name = "a#1";
    row.group = "a";
    row.owner_name = "alice";
    row.owner_uid = 1001;
    row.state = c.state;
    row.reason = "why";
    row.device = c.device;
    row.attempts = 2;
    row.submitted_ms = kNow - 3;
    row.started_ms = kNow - 2;
    row.ended_ms = kNow - 1;
    row.job_file = "jobs.toml";
    row.log_path = "/logs/7.log";
    const QueueJob q = queue_job_of(row, "mps");
    EXPECT_EQ(q.id, 7);
    EXPECT_EQ(q.name, "a#1");
    EXPECT_EQ(q.group, "a");
    EXPECT_EQ(q.owner, "alice");
    EXPECT_EQ(q.owner_uid, 1001u);
    EXPECT_EQ(q.state, c.shown);
    EXPECT_EQ(q.reason, "why");
    EXPECT_EQ(q.gpu, c.device);
    EXPECT_EQ(q.mechanism, "mps");
    EXPECT_EQ(q.attempts, 2);
    EXPECT_EQ(q.submitted_ms, kNow - 3);
    EXPECT_EQ(q.started_ms, kNow - 2);
    EXPECT_EQ(q.ended_ms, kNow - 1);
    EXPECT_EQ(q.job_file, "jobs.toml");
    EXPECT_FALSE(q.epoch.has_value());
    EXPECT_FALSE(q.samples_per_s.has_value());
    EXPECT_FALSE(q.predicted_end_ms.has_value());
  }
}

TEST(UsageByGroup, SumsEachUsersFiguresIntoTheirGroup) {
  UsageReport by_user;
  by_user.owners["alice"] = OwnerJobs{2, 1, 4000, 2, 9000};
  by_user.owners["bob"] = OwnerJobs{0, 3, 1000, 1, 5000};
  by_user.owners["carol"] = OwnerJobs{1, 0, 500, 1, 700};
  by_user.ended = {{"alice", 3, 1, 6000, 5000, 4000, 7200},
                   {"bob", 2, 0, 8000, 4000, 8000, 3600},
                   {"carol", 1, 1, 100, 90, 100, 10}};
  const auto group_of = [](const std::string& user) {
    return user == "carol" ? std::string("audio") : std::string("vision");
  };
  const UsageReport by_group = usage_by_group(by_user, group_of);
  EXPECT_EQ(by_group.by, "group");
  ASSERT_EQ(by_group.owners.size(), 2u);
  const OwnerJobs& vision = by_group.owners.at("vision");
  EXPECT_EQ(vision.queued, 2);
  EXPECT_EQ(vision.running, 4);
  EXPECT_DOUBLE_EQ(vision.usage_ms, 5000);
  EXPECT_DOUBLE_EQ(vision.total_ms, 14000);
  EXPECT_EQ(vision.weight, 0) << "weights are users'";
  ASSERT_EQ(by_group.ended.size(), 2u);
  EXPECT_EQ(by_group.ended[0], (ServiceUsageReport{"vision", 5, 1, 14000, 9000, 12000, 10800}))
      << "most GPU time first";
  EXPECT_EQ(by_group.ended[1], (ServiceUsageReport{"audio", 1, 1, 100, 90, 100, 10}));

  const std::string text = format_usage(by_group, "in the last 7d");
  EXPECT_THAT(text, ::testing::ContainsRegex("GROUP +WEIGHT"));
  EXPECT_THAT(text, ::testing::ContainsRegex("vision +- "));
  EXPECT_THAT(text, HasSubstr("Each user is counted in their primary group."));
  EXPECT_THAT(usage_csv(by_group), ::testing::StartsWith("group,weight,"));
  EXPECT_THAT(usage_csv(by_user), ::testing::StartsWith("user,weight,"));
}

// colo usage's speed-up is solo-equivalent time over the GPU time held (two
// jobs sharing a GPU, each at 70% of its solo rate: 1.40x), and its energy
// is in units a person reads.
TEST(FormatUsage, GivesEachUsersSpeedUpFromCollocationAndEnergy) {
  UsageReport report;
  report.ended = {{"alice", 2, 0, 20'000, 14'000, 10'000, 7'200, 0, 20'000, 10'000},
                  {"bob", 1, 0, 1'000, 0, 0, 0}};
  const std::string text = format_usage(report, "in the last 7d");
  EXPECT_THAT(text, ::testing::ContainsRegex("SOLO/GPU +SPEED-UP +ENERGY"));
  EXPECT_THAT(text, ::testing::ContainsRegex("alice +2 +0 +0 .* 0\\.70 +1\\.40x +2\\.0 Wh"));
  EXPECT_THAT(text, ::testing::ContainsRegex("bob .* - +- +-\n"));
  EXPECT_EQ(format_energy(850), "850 J");
  EXPECT_EQ(format_energy(45'000), "12.5 Wh");
  EXPECT_EQ(format_energy(11.52e6), "3.20 kWh");
  EXPECT_THAT(
      usage_csv(report),
      HasSubstr("gpu_ms,solo_ms,share_ms,energy_j,cancelled,rated_gpu_ms,rated_share_ms\n"));
  EXPECT_THAT(usage_csv(report), HasSubstr(",20000,14000,10000,7200.0,0,20000,10000\n"));
}

// Issue 58, item 12: where no solo rate was known, colo usage prints no
// solo/GPU figure or speed-up (it printed "0.35" beside "1.00x": the charge
// stood in for the solo-equivalent time), says why, and counts what was
// known only where a rate was known for part of the time; cancelled jobs are
// a column of their own, not jobs that ended.
TEST(FormatUsage, ShowsNoSoloFiguresWhereNoSoloRateWasKnownAndCountsCancelledApart) {
  UsageReport report;
  ServiceUsageReport unrated{"carol", 3, 1, 10'000, 0, 3'500, 0};
  unrated.cancelled = 2;
  ServiceUsageReport part{"dave", 1, 0, 10'000, 3'000, 10'000, 0};
  part.rated_gpu_ms = 5'000;
  part.rated_share_ms = 5'000;
  report.ended = {unrated, part};
  const std::string text = format_usage(report, "in the last 7d");
  EXPECT_THAT(text, ::testing::ContainsRegex("JOBS +FAILED +CANCELLED +GPU TIME"));
  EXPECT_THAT(text, ::testing::ContainsRegex("carol +3 +1 +2 +10\\.0s +- +- +- +-\n")) << text;
  EXPECT_THAT(text, Not(HasSubstr("0.35")));
  EXPECT_THAT(text, ::testing::ContainsRegex("dave +1 +0 +0 +10\\.0s +3\\.0s +0\\.60 +0\\.60x"))
      << text;
  EXPECT_THAT(text, HasSubstr("-: no solo rate known"));
}

}  // namespace
}  // namespace colo
