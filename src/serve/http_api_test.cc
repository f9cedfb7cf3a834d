#include "serve/http_api.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "common/proc_stat.h"
#include "jobs/job_spec_json.h"
#include "run/log_layout.h"

namespace colo {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr UnixMillis kT0 = 1'700'000'000'000;

TEST(HttpAddress, ParsesAddressesAndSaysWhatToWrite) {
  struct Case {
    const char* text;
    const char* host;
    int port;
  };
  for (const Case& c : {Case{"127.0.0.1:8470", "127.0.0.1", 8470}, Case{":9400", "127.0.0.1", 9400},
                        Case{"8470", "127.0.0.1", 8470}, Case{"0.0.0.0:0", "0.0.0.0", 0},
                        Case{"[::1]:8470", "::1", 8470}, Case{"localhost:80", "localhost", 80}}) {
    Result<HttpOptions> o = parse_http_address(c.text);
    ASSERT_TRUE(o.ok()) << c.text << ": " << o.error().message();
    EXPECT_EQ(o->host, c.host) << c.text;
    EXPECT_EQ(o->port, c.port) << c.text;
  }
  for (const char* bad : {"127.0.0.1", "host:", "host:99999", "::1:80", "[::1]80", "a:b"}) {
    Result<HttpOptions> o = parse_http_address(bad);
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_THAT(o.error().message(), HasSubstr("--http")) << bad;
  }
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("::1"));
  EXPECT_FALSE(is_loopback("0.0.0.0"));
}

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/colo-http-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = RunStore::open(dir_ + "/colo.db");
    ASSERT_TRUE(store.ok());
    writer_ = std::move(store).value();

    // Service job 1: attempt 1 ran out of memory after one epoch, attempt 2 runs.
    NewServiceJob submitted{kT0,          1000,       "alice", "/home/alice/jobs.toml",
                            "resnet26#1", "resnet26", "{}",    "{}"};
    auto ids = writer_->add_service_jobs({submitted});
    ASSERT_TRUE(ids.ok());
    id_ = ids->front();
    NewRun run;
    run.started_ms = kT0;
    run.mechanism = "mps";
    run.backend = "sim";
    run.host = "box";
    run.colo_pid = getpid();
    run_id_ = *writer_->begin_run(run);
    JobSpec spec;
    spec.name = "resnet26#1";
    spec.command = {"x"};
    log_ = dir_ + "/job.log";
    auto rows = writer_->add_jobs(run_id_, {spec}, {log_}, kT0);
    ASSERT_TRUE(rows.ok());
    const int64_t row = rows->front();
    ASSERT_TRUE(writer_->service_job_started(id_, row, 0, kT0 + 1000, log_).ok());
    ASSERT_TRUE(writer_->job_started(row, 100, 0, kT0 + 1000, 1).ok());
    ASSERT_TRUE(writer_->add_job_events({{row, epoch_end(1, kT0 + 11'000, 5000)}}).ok());
    ASSERT_TRUE(writer_->job_requeued(row, log_, "out of memory; retried", kT0 + 12'000).ok());
    ASSERT_TRUE(writer_->job_started(row, 101, 1, kT0 + 13'000, 2).ok());
    ASSERT_TRUE(writer_
                    ->add_job_events({{row, epoch_end(1, kT0 + 18'000, 5000)},
                                      {row, epoch_end(2, kT0 + 22'000, 5000)}})
                    .ok());
    std::ofstream(log_) << "epoch 1\nepoch 2\nepoch 3 of a long line\n";

    snapshot_ = std::make_shared<ServiceSnapshot>();
    snapshot_->time_ms = kT0 + 23'000;
    snapshot_->service.host = "box";
    snapshot_->service.mechanism = "mps";
    snapshot_->service.state = "running";
    DeviceSample d;
    d.device = 1;
    d.time_ms = kT0 + 22'500;
    d.sm_active_pct = 50;
    DeviceSample older = d;
    older.time_ms = kT0 + 20'000;
    snapshot_->gpus.push_back({1, "NVIDIA H100", "GPU-1", 80ull << 30, 1, d});
    snapshot_->samples = {older, d};
    QueueJob live;
    live.id = id_;
    live.name = "resnet26#1";
    live.owner = "alice";
    live.state = "running";
    live.gpu = 1;
    live.attempts = 2;
    live.epoch = 2;
    live.samples_per_s = 1250;
    QueueJob queued = live;
    queued.id = id_ + 1;
    queued.state = "queued";
    QueueJob ended = live;
    ended.id = id_ + 2;
    ended.state = "failed";
    snapshot_->jobs = {live, queued, ended};
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  static ProgressEvent epoch_end(int64_t epoch, UnixMillis t, int64_t samples) {
    ProgressEvent e;
    e.time_ms = t;
    e.kind = "epoch_end";
    e.epoch = epoch;
    e.samples = samples;
    return e;
  }

  std::shared_ptr<ApiRoutes> routes(bool logs = false) {
    auto reader = RunStore::open_read_only(dir_ + "/colo.db");
    EXPECT_TRUE(reader.ok());
    HttpOptions o;
    o.logs = logs;
    std::shared_ptr<const ServiceSnapshot> snap = snapshot_;
    return std::make_shared<ApiRoutes>([snap] { return snap; },
                                       reader.ok() ? std::move(reader).value() : nullptr, o);
  }

  static json body(const HttpAnswer& a) { return json::parse(a.body); }

  // A service job `name` of alice's that started, in the service's layout
  // under dir_/serve/key: its id, and its profile directory made.
  std::pair<int64_t, std::string> add_profiled_job(const std::string& name) {
    NewServiceJob submitted{kT0, 2000, "alice", "/home/alice/jobs.toml", name, name, "{}", "{}"};
    auto ids = writer_->add_service_jobs({submitted});
    EXPECT_TRUE(ids.ok());
    const int64_t id = ids->front();
    const std::string service_dir = dir_ + "/serve/key";
    const std::string log = service_job_stem(service_dir, id, name) + ".log";
    JobSpec spec;
    spec.name = name;
    spec.command = {"x"};
    auto rows = writer_->add_jobs(run_id_, {spec}, {log}, kT0);
    EXPECT_TRUE(rows.ok());
    EXPECT_TRUE(writer_->service_job_started(id, rows->front(), 0, kT0 + 1000, log).ok());
    const std::string profiles = service_profile_dir(service_dir, id);
    EXPECT_EQ(std::system(("mkdir -p '" + profiles + "'").c_str()), 0);
    return {id, profiles};
  }
  static void write_summary(const std::string& profiles, int n, const std::string& trace) {
    std::ofstream(profiles + "/torch-summary-" + std::to_string(n) + ".json")
        << json{{"window", n}, {"started", 1}, {"ended", 2}, {"trace", trace}}.dump();
  }

  std::string dir_;
  std::string log_;
  std::unique_ptr<RunStore> writer_;
  int64_t id_ = 0;
  int64_t run_id_ = 0;
  std::shared_ptr<ServiceSnapshot> snapshot_;
};

TEST_F(HttpApiTest, AJobShowsItsAttemptsEpochsEventsAndLog) {
  auto api = routes();
  HttpAnswer a = api->get("/api/jobs/" + std::to_string(id_), {});
  ASSERT_EQ(a.status, 200) << a.body;
  json j = body(a);
  EXPECT_EQ(j["job"]["samples_per_s"], 1250) << "the live values of the snapshot";
  ASSERT_EQ(j["attempts"].size(), 2u);
  EXPECT_EQ(j["attempts"][0]["state"], "requeued");
  EXPECT_EQ(j["attempts"][0]["reason"], "out of memory; retried");
  EXPECT_EQ(j["attempts"][0]["gpu"], 0);
  EXPECT_EQ(j["attempts"][1]["state"], "running");
  EXPECT_EQ(j["attempts"][1]["gpu"], 1);
  EXPECT_EQ(j["attempts"][1]["run_id"], run_id_);
  ASSERT_EQ(j["epochs"].size(), 3u);
  // Attempt 1's epoch took 10 s from its start; attempt 2's first 5 s, its second 4 s.
  EXPECT_EQ(j["epochs"][0]["attempt"], 1);
  EXPECT_DOUBLE_EQ(j["epochs"][0]["seconds"].get<double>(), 10.0);
  EXPECT_EQ(j["epochs"][1]["attempt"], 2);
  EXPECT_DOUBLE_EQ(j["epochs"][1]["seconds"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j["epochs"][2]["samples_per_s"].get<double>(), 1250.0);
  ASSERT_EQ(j["events"].size(), 3u);
  EXPECT_EQ(body(api->get("/api/jobs/" + std::to_string(id_), {{"events", "1"}}))["events"].size(),
            1u);
  EXPECT_EQ(j["log"]["path"], log_);
  EXPECT_TRUE(j["log"]["tail"].is_null()) << "log tails are off by default";
  EXPECT_THAT(j["log"]["note"].get<std::string>(), HasSubstr("--http-logs"));

  json with_logs = body(routes(true)->get("/api/jobs/" + std::to_string(id_), {{"tail", "24"}}));
  EXPECT_EQ(with_logs["log"]["tail"], "epoch 3 of a long line\n") << "from a line's start";
  EXPECT_EQ(with_logs["log"]["truncated"], true);
}

// Issue 58, item 14: a job's page showed no grid values nor submission, drew
// a loss from 25 to 0.013 on a linear axis, and stated the name rule
// although the job file declared [objective]. The API gives each.
TEST_F(HttpApiTest, AJobGivesItsGridValuesSubmissionObjectiveAndEachMetricsAxis) {
  JobSpec spec;
  spec.name = "sw[lr=0.2]";
  spec.command = {"x"};
  spec.params = {{"lr", "0.2"}, {"opt", "adam"}};
  spec.objective = "val_acc";
  spec.lower_is_better = {{"val_acc", false}, {"fid", true}};
  NewServiceJob submitted{
      kT0, 1000, "alice", "/home/alice/sw.toml", spec.name, "sw", job_spec_to_json(spec).dump(),
      "{}"};
  auto ids = writer_->add_service_jobs({submitted}, run_id_, {"lr-b", {{"k", "v"}}, ""});
  ASSERT_TRUE(ids.ok());
  auto rows = writer_->add_jobs(run_id_, {spec}, {dir_ + "/sw.log"}, kT0);
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE(writer_->service_job_started(ids->front(), rows->front(), 0, kT0 + 1000, "").ok());
  ASSERT_TRUE(writer_->job_started(rows->front(), 102, 0, kT0 + 1000, 1).ok());
  const std::vector<std::pair<double, double>> losses = {{25, 0.1}, {0.4, 0.5}, {0.013, 0.9}};
  std::vector<std::pair<int64_t, ProgressEvent>> events;
  for (size_t i = 0; i < losses.size(); ++i) {
    ProgressEvent e = epoch_end(static_cast<int64_t>(i + 1), kT0 + 2000 * (i + 1), 100);
    e.metrics = {{"loss", losses[i].first}, {"val_acc", losses[i].second}};
    events.push_back({rows->front(), e});
  }
  ASSERT_TRUE(writer_->add_job_events(events).ok());

  json j = body(routes()->get("/api/jobs/" + std::to_string(ids->front()), {}));
  EXPECT_EQ(j["params"], (json{{"lr", 0.2}, {"opt", "adam"}}));
  ASSERT_TRUE(j["submission"].is_object()) << j.dump();
  EXPECT_EQ(j["submission"]["name"], "lr-b");
  EXPECT_EQ(j["submission"]["run_id"], run_id_);
  EXPECT_EQ(j["submission"]["owner"], "alice");
  EXPECT_EQ(j["submission"]["tags"]["k"], "v");
  EXPECT_EQ(j["submission"]["title"], "#" + std::to_string(run_id_) + "/" +
                                          std::to_string(j["submission"]["id"].get<int64_t>()) +
                                          " lr-b");
  EXPECT_EQ(j["objective"],
            (json{{"metric", "val_acc"}, {"goals", {{"val_acc", "max"}, {"fid", "min"}}}}));
  EXPECT_EQ(j["metrics"]["loss"]["axis"], "log") << "25 to 0.013";
  EXPECT_EQ(j["metrics"]["val_acc"]["axis"], "linear") << "0.1 to 0.9";

  // A job of no sweep, submitted to no run, and with no [objective].
  json plain = body(routes()->get("/api/jobs/" + std::to_string(id_), {}));
  EXPECT_EQ(plain["params"], json::object());
  EXPECT_TRUE(plain["objective"].is_null());
  ASSERT_TRUE(plain["submission"].is_object());
  EXPECT_TRUE(plain["submission"]["run_id"].is_null());
  EXPECT_EQ(plain["submission"]["title"],
            "submission " + std::to_string(plain["submission"]["id"].get<int64_t>()));
}

// Issue 56, item 6: each steady epoch's rate over the job's solo rate, what
// the dashboard draws against a protected job's floor; none for an
// attempt's first epoch (start-up) or without a solo rate.
TEST_F(HttpApiTest, EachSteadyEpochHasItsSpeedOfSolo) {
  json without = body(routes()->get("/api/jobs/" + std::to_string(id_), {}));
  for (const json& e : without["epochs"]) EXPECT_TRUE(e["speed_of_solo"].is_null()) << e.dump();
  snapshot_->jobs[0].solo_samples_per_s = 2500;
  json j = body(routes()->get("/api/jobs/" + std::to_string(id_), {}));
  ASSERT_EQ(j["epochs"].size(), 3u);
  EXPECT_TRUE(j["epochs"][0]["speed_of_solo"].is_null()) << "attempt 1's first epoch";
  EXPECT_TRUE(j["epochs"][1]["speed_of_solo"].is_null()) << "attempt 2's first epoch";
  EXPECT_DOUBLE_EQ(j["epochs"][2]["speed_of_solo"].get<double>(), 0.5);
}

// A job the snapshot no longer lists (ended long ago, or under an earlier
// service process) still shows its run and last epoch, from the store.
TEST_F(HttpApiTest, AJobOutsideTheSnapshotShowsItsRunAndLastEpochFromTheStore) {
  snapshot_->jobs.clear();
  json j = body(routes()->get("/api/jobs/" + std::to_string(id_), {}));
  EXPECT_EQ(j["job"]["run_id"], run_id_);
  EXPECT_EQ(j["job"]["epoch"], 2) << "attempt 2's last, not attempt 1's";
  EXPECT_TRUE(j["job"]["samples_per_s"].is_null()) << "the snapshot's live values are gone";
}

// A profiling window's trace downloads, when jobs' files are served
// (--http-logs), and only from the job's own profile directory: a summary
// the job wrote that names a file elsewhere, or a link, serves nothing.
TEST_F(HttpApiTest, AProfilingWindowsTraceDownloadsOnlyFromItsProfileDirectory) {
  const auto [id, profiles] = add_profiled_job("prof");
  auto summary = [&](int n, const std::string& trace) { write_summary(profiles, n, trace); };
  // Larger than one chunk of the sender's (1 MiB), so that it goes in parts.
  std::string trace = "{\"traceEvents\": [";
  while (trace.size() < (size_t{5} << 19)) trace += "{\"name\": \"aten::mm\", \"ph\": \"X\"},";
  trace += "{}]}";
  std::ofstream(profiles + "/torch-trace-1.json") << trace;
  summary(1, "torch-trace-1.json");
  std::ofstream(dir_ + "/secret.json") << "{\"secret\": 1}";
  summary(2, "../../../../secret.json");
  ASSERT_EQ(::symlink((dir_ + "/secret.json").c_str(), (profiles + "/torch-trace-3.json").c_str()),
            0);
  summary(3, "torch-trace-3.json");
  const std::string route = "/api/jobs/" + std::to_string(id) + "/profiles/";

  // Off unless asked for, as log tails.
  json off = body(routes()->get("/api/jobs/" + std::to_string(id), {}));
  ASSERT_EQ(off["profiles"].size(), 3u) << off.dump();
  EXPECT_TRUE(off["profiles"][0]["trace_url"].is_null());
  HttpAnswer refused = routes()->get(route + "1/trace", {});
  EXPECT_EQ(refused.status, 403);
  EXPECT_THAT(refused.body, HasSubstr("--http-logs"));

  auto api = routes(true);
  json on = body(api->get("/api/jobs/" + std::to_string(id), {}));
  EXPECT_EQ(on["profiles"][0]["trace_url"], route + "1/trace");
  HttpAnswer got = api->get(route + "1/trace", {});
  ASSERT_EQ(got.status, 200) << got.body;
  ASSERT_TRUE(got.file);
  EXPECT_EQ(got.file_size, trace.size());
  EXPECT_EQ(got.download_name, "job-" + std::to_string(id) + "-torch-trace-1.json");
  for (const char* n : {"2", "3"}) {
    HttpAnswer outside = api->get(route + n + "/trace", {});
    EXPECT_EQ(outside.status, 404) << n;
    EXPECT_FALSE(outside.file) << n;
    EXPECT_EQ(outside.body.find("secret\": 1"), std::string::npos) << n;
  }
  EXPECT_THAT(api->get(route + "2/trace", {}).body, HasSubstr("not a file of the job's profile"));
  HttpAnswer missing = api->get(route + "9/trace", {});
  EXPECT_EQ(missing.status, 404);
  EXPECT_THAT(missing.body, HasSubstr("no profiling window 9"));
  for (const std::string& bad :
       std::vector<std::string>{route + "x/trace", route + "1", "/api/jobs/1/x", route + "0/trace"})
    EXPECT_EQ(api->get(bad, {}).status, 404) << bad;

  // Over HTTP: the file whole, as a download.
  HttpOptions o;
  o.port = 0;
  Result<std::unique_ptr<HttpServer>> server = HttpServer::bind(o);
  ASSERT_TRUE(server.ok()) << server.error().message();
  (*server)->serve(api);
  const std::string address = (*server)->address();
  httplib::Client client("127.0.0.1", std::stoi(address.substr(address.rfind(':') + 1)));
  httplib::Result sent = client.Get(route + "1/trace");
  ASSERT_TRUE(sent) << httplib::to_string(sent.error());
  EXPECT_EQ(sent->status, 200);
  EXPECT_TRUE(sent->body == trace) << "got " << sent->body.size() << " bytes of " << trace.size();
  EXPECT_THAT(sent->get_header_value("Content-Disposition"),
              HasSubstr("filename=\"job-" + std::to_string(id) + "-torch-trace-1.json\""));
  httplib::Result outside = client.Get(route + "3/trace");
  ASSERT_TRUE(outside);
  EXPECT_EQ(outside->status, 404);
  (*server)->stop();
}

// Findings 4 and 5 of issue 53: a job's summary linked to /dev/zero (one
// request took the service from 11 MB to 2 GB), a huge one, a log and a
// trace that are FIFOs (20 trace requests held every worker for good). The
// job's page answers with what it can read, naming the rest; the trace route
// answers an error; the other routes keep answering.
TEST_F(HttpApiTest, AJobsFilesThatAreLinksFifosOrHugeHoldNoWorkerAndNoMemory) {
  const auto [id, profiles] = add_profiled_job("hostile");
  write_summary(profiles, 1, "torch-trace-1.json");
  ASSERT_EQ(::mkfifo((profiles + "/torch-trace-1.json").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/zero", (profiles + "/torch-summary-2.json").c_str()), 0);
  const std::string huge = profiles + "/torch-summary-3.json";
  std::ofstream(huge) << "{";
  std::filesystem::resize_file(huge, uint64_t{8} << 30);  // sparse
  ASSERT_EQ(::mkfifo((profiles + "/torch-summary-4.json").c_str(), 0600), 0);
  const std::string log = service_job_stem(dir_ + "/serve/key", id, "hostile") + ".log";
  std::filesystem::create_directories(std::filesystem::path(log).parent_path());
  ASSERT_EQ(::mkfifo(log.c_str(), 0600), 0);
  const std::string route = "/api/jobs/" + std::to_string(id);

  auto api = routes(true);
  HttpOptions o;
  o.port = 0;
  Result<std::unique_ptr<HttpServer>> server = HttpServer::bind(o);
  ASSERT_TRUE(server.ok()) << server.error().message();
  (*server)->serve(api);
  // A worker that waits on a FIFO (this test failing) is let go before the server stops.
  struct LetGo {
    std::vector<std::string> fifos;
    ~LetGo() {
      for (const std::string& fifo : fifos) {
        const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
        if (writer >= 0) ::close(writer);
      }
    }
  } let_go{{profiles + "/torch-trace-1.json", profiles + "/torch-summary-4.json", log}};
  const std::string address = (*server)->address();
  httplib::Client client("127.0.0.1", std::stoi(address.substr(address.rfind(':') + 1)));
  httplib::Result page = client.Get(route);
  ASSERT_TRUE(page) << httplib::to_string(page.error());
  ASSERT_EQ(page->status, 200) << page->body;
  const json j = json::parse(page->body);
  ASSERT_EQ(j["profiles"].size(), 1u) << "window 1 alone: the others are not read";
  EXPECT_EQ(j["profiles"][0]["window"], 1);
  EXPECT_TRUE(j["log"]["tail"].is_null());
  EXPECT_THAT(j["log"]["note"].get<std::string>(), HasSubstr("is a FIFO, not a regular file"));
  // More trace requests than the service has workers (16).
  for (int i = 0; i < 20; ++i) {
    httplib::Result trace = client.Get(route + "/profiles/1/trace");
    ASSERT_TRUE(trace) << "request " << i << ": " << httplib::to_string(trace.error());
    EXPECT_EQ(trace->status, 404);
    EXPECT_THAT(trace->body, HasSubstr("torch-trace-1.json is a FIFO, not a regular file"));
  }
  httplib::Result gpus = client.Get("/api/gpus");
  ASSERT_TRUE(gpus) << httplib::to_string(gpus.error());
  EXPECT_EQ(gpus->status, 200);
  (*server)->stop();
}

TEST_F(HttpApiTest, ListsFilterAndBadRequestsSayWhy) {
  auto api = routes();
  json all = body(api->get("/api/jobs", {}));
  EXPECT_EQ(all["jobs"].size(), 3u);
  json ended = body(api->get("/api/jobs", {{"state", "ended"}}));
  ASSERT_EQ(ended["jobs"].size(), 1u);
  EXPECT_EQ(ended["jobs"][0]["state"], "failed");
  HttpAnswer bad = api->get("/api/jobs", {{"state", "sleeping"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("?state= must be"));

  json samples = body(api->get("/api/samples", {{"since", std::to_string(kT0 + 21'000)}}));
  ASSERT_EQ(samples["samples"].size(), 1u);
  EXPECT_EQ(samples["samples"][0]["time_ms"], kT0 + 22'500);
  EXPECT_EQ(body(api->get("/api/samples", {{"gpu", "0"}}))["samples"].size(), 0u);
  EXPECT_EQ(api->get("/api/samples", {{"since", "yesterday"}}).status, 400);

  json gpus = body(api->get("/api/gpus", {}));
  ASSERT_EQ(gpus["gpus"].size(), 1u);
  EXPECT_EQ(gpus["gpus"][0]["uuid"], "GPU-1");
  json runs = body(api->get("/api/runs", {{"limit", "5"}}));
  ASSERT_EQ(runs["runs"].size(), 1u);
  EXPECT_EQ(runs["runs"][0]["id"], run_id_);
  EXPECT_EQ(runs["runs"][0]["state"], "running");
  EXPECT_EQ(body(api->get("/api/snapshot", {}))["version"], kSnapshotVersion);
  EXPECT_EQ(body(api->get("/api/service", {}))["service"]["mechanism"], "mps");
  EXPECT_EQ(api->get("/api/jobs/999", {}).status, 404);
  EXPECT_EQ(api->get("/api/nothing", {}).status, 404);
  HttpAnswer metrics = api->get("/metrics", {});
  EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(metrics.body, HasSubstr("DCGM_FI_PROF_SM_ACTIVE{gpu=\"1\""));
}

// The dashboard's usage page reads /api/usage: the snapshot's owners, and
// per user the jobs that ended since ?since= with the store's per-job
// figures summed (the same rows as `colo usage --json`).
TEST_F(HttpApiTest, UsageGivesEachUsersFiguresFromTheStoreSinceAMoment) {
  ASSERT_TRUE(writer_->add_service_job_usage(id_, {4000, 2800, 2000, 360}).ok());
  ASSERT_TRUE(writer_->service_job_ended(id_, JobState::kOk, "", kT0 + 22'000).ok());
  snapshot_->owners["alice"] = OwnerJobs{1, 0, 2500, 2, 2800};
  auto api = routes();
  json u = body(api->get("/api/usage", {}));
  EXPECT_EQ(u["since_ms"], kT0 + 23'000 - 7 * 86'400'000LL) << "the last 7 days by default";
  EXPECT_EQ(u["owners"]["alice"]["weight"], 2);
  ASSERT_EQ(u["ended"].size(), 1u);
  EXPECT_EQ(u["ended"][0]["owner"], "alice");
  EXPECT_EQ(u["ended"][0]["jobs"], 1);
  EXPECT_EQ(u["ended"][0]["share_ms"], 2000);
  EXPECT_EQ(u["ended"][0]["energy_j"], 360);
  EXPECT_EQ(body(api->get("/api/usage", {{"since", std::to_string(kT0 + 22'001)}}))["ended"].size(),
            0u);
  EXPECT_EQ(api->get("/api/usage", {{"since", "monday"}}).status, 400);
}

TEST_F(HttpApiTest, BeforeTheFirstSnapshotItSaysItIsStarting) {
  ApiRoutes api([] { return std::shared_ptr<const ServiceSnapshot>(); }, nullptr, HttpOptions{});
  EXPECT_EQ(api.get("/api/jobs", {}).status, 503);
  EXPECT_EQ(api.get("/api", {}).status, 200);
}

// A browser pointed at http://ADDR/ lands on the dashboard; scripts find the
// route index at /api (it was once the answer to /).
TEST_F(HttpApiTest, TheRootRedirectsToTheDashboardAndApiListsTheRoutes) {
  ApiRoutes bare([] { return std::shared_ptr<const ServiceSnapshot>(); }, nullptr, HttpOptions{});
  HttpAnswer root = bare.get("/", {});
  EXPECT_EQ(root.status, 303);
  EXPECT_EQ(root.location, "/api") << "no dashboard: the route index";
  json index = json::parse(bare.get("/api", {}).body);
  EXPECT_EQ(index["colo"], "serve");
  EXPECT_THAT(index["routes"].dump(), HasSubstr("/api/jobs/ID"));
  EXPECT_FALSE(index.contains("dashboard"));

  auto api = routes();
  EXPECT_THAT(api->get("/api/nothing", {}).body, HasSubstr("GET /api lists them"));
  api->add_pages([](const std::string& path, const ApiReader&) -> std::optional<HttpAnswer> {
    if (path != "/dashboard/") return std::nullopt;
    return HttpAnswer{200, "text/html", "<html></html>"};
  });
  EXPECT_EQ(api->get("/", {}).location, "/dashboard/");
  EXPECT_EQ(json::parse(api->get("/api", {}).body)["dashboard"], "/dashboard/");

  HttpOptions o;
  Result<std::unique_ptr<HttpServer>> server = HttpServer::bind(o);
  ASSERT_TRUE(server.ok()) << server.error().message();
  (*server)->serve(api);
  const std::string address = (*server)->address();
  httplib::Client client("127.0.0.1", std::stoi(address.substr(address.rfind(':') + 1)));
  httplib::Result got = client.Get("/");
  ASSERT_TRUE(got) << httplib::to_string(got.error());
  EXPECT_EQ(got->status, 303);
  EXPECT_EQ(got->get_header_value("Location"), "/dashboard/");
  client.set_follow_location(true);
  httplib::Result followed = client.Get("/");
  ASSERT_TRUE(followed);
  EXPECT_EQ(followed->status, 200);
  EXPECT_EQ(followed->body, "<html></html>");
  (*server)->stop();
}

// Issue 58, item 14: a page embeds the API's answers as its first data, read
// as the request would read them; a page is never read so (it would ask
// itself).
TEST_F(HttpApiTest, APageReadsTheApiAsItsRequestWould) {
  auto api = routes();
  HttpAnswer snapshot;
  HttpAnswer page;
  api->add_pages([&](const std::string& path, const ApiReader& read) -> std::optional<HttpAnswer> {
    if (path != "/dashboard/") return std::nullopt;
    snapshot = read("/api/snapshot");
    page = read("/dashboard/");
    return HttpAnswer{200, "text/html", "<html></html>"};
  });
  EXPECT_EQ(api->get("/dashboard/", {}).status, 200);
  ASSERT_EQ(snapshot.status, 200) << snapshot.body;
  EXPECT_EQ(body(snapshot)["service"]["host"], "box");
  EXPECT_EQ(body(snapshot)["jobs"].size(), 3u);
  EXPECT_EQ(page.status, 404);
}

TEST_F(HttpApiTest, ServesOverHttpReadOnly) {
  HttpOptions o;
  o.port = 0;
  Result<std::unique_ptr<HttpServer>> server = HttpServer::bind(o);
  ASSERT_TRUE(server.ok()) << server.error().message();
  (*server)->serve(routes());
  const std::string address = (*server)->address();
  ASSERT_THAT(address, HasSubstr("127.0.0.1:"));
  const int port = std::stoi(address.substr(address.rfind(':') + 1));

  // A second server on the same port is an error that says what to do.
  HttpOptions same = o;
  same.port = port;
  Result<std::unique_ptr<HttpServer>> taken = HttpServer::bind(same);
  ASSERT_FALSE(taken.ok());
  EXPECT_THAT(taken.error().message(), HasSubstr("cannot listen there"));

  httplib::Client client("127.0.0.1", port);
  httplib::Result got = client.Get("/api/jobs?state=queued");
  ASSERT_TRUE(got) << httplib::to_string(got.error());
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(json::parse(got->body)["jobs"].size(), 1u);
  EXPECT_EQ(got->get_header_value("Content-Type"), "application/json");
  httplib::Result post = client.Post("/api/jobs", "", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_THAT(post->body, HasSubstr("read-only"));
  // No route takes a body: none is read, so one sent slowly holds no worker.
  httplib::Result with_body = client.Post("/api/jobs", "{}", "application/json");
  ASSERT_TRUE(with_body);
  EXPECT_EQ(with_body->status, 405);
  // DNS rebinding: a page of another site, its name now resolving to
  // 127.0.0.1, reads nothing.
  httplib::Result rebound =
      client.Get("/api/jobs", {{"Host", "evil.example:" + std::to_string(port)}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 421);
  EXPECT_EQ(rebound->body.find("queued"), std::string::npos);
  httplib::Result by_name =
      client.Get("/api/jobs", {{"Host", "localhost:" + std::to_string(port)}});
  ASSERT_TRUE(by_name);
  EXPECT_EQ(by_name->status, 200);

  // Slow clients, each holding a connection with half a request line, do
  // not keep others out.
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_GT(::send(fd, "GET /metrics HTTP/1.1\r\nX-Slow: ", 31, 0), 0);
    slow.push_back(fd);
  }
  httplib::Client quick("127.0.0.1", port);
  quick.set_read_timeout(std::chrono::seconds(4));
  httplib::Result answered = quick.Get("/api/jobs");
  ASSERT_TRUE(answered) << httplib::to_string(answered.error());
  EXPECT_EQ(answered->status, 200);
  for (int fd : slow) ::close(fd);
  (*server)->stop();
  (*server)->stop();
  EXPECT_FALSE(httplib::Client("127.0.0.1", port).Get("/"));
}

int connect_tcp(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// Issue 35, item 5: 1,035 idle connections, or 40 slow clients, left
// /metrics unanswered for 10 s (each held one of httplib's workers). The
// figure "within 1 s" is measured by bench/http-flood.sh; this test fails
// where the old server would have answered after a minute.
TEST_F(HttpApiTest, MetricsAnswerUnderAThousandIdleAndAHundredSlowClients) {
  if (raise_open_file_limit(8192) < 3000) GTEST_SKIP() << "the hard limit on open files is low";
  Result<std::unique_ptr<HttpServer>> server = HttpServer::bind(HttpOptions{});
  ASSERT_TRUE(server.ok()) << server.error().message();
  (*server)->serve(routes());
  const std::string address = (*server)->address();
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  std::vector<int> held;
  for (int i = 0; i < 1100; ++i) held.push_back(connect_tcp(port));
  for (int i = 0; i < 100; ++i) {
    int fd = connect_tcp(port);
    ASSERT_GT(::send(fd, "GET /metrics HTTP/1.1\r\nX-Slow: ", 31, 0), 0);
    held.push_back(fd);
  }
  httplib::Client scraper("127.0.0.1", port);
  scraper.set_connection_timeout(std::chrono::seconds(5));
  scraper.set_read_timeout(std::chrono::seconds(5));
  const auto start = std::chrono::steady_clock::now();
  httplib::Result metrics = scraper.Get("/metrics");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  ASSERT_TRUE(metrics) << httplib::to_string(metrics.error());
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("colo_"));
  std::cout << "/metrics answered in " << ms << " ms beside 1,100 idle and 100 slow clients\n";
  // The connections beyond this user's bound were closed, each told why
  // (or, on a machine too busy to open them all within the deadline, told
  // that their request never came).
  char buf[512] = {};
  timeval tv{5, 0};
  ::setsockopt(held.front(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ASSERT_GT(::recv(held.front(), buf, sizeof buf - 1, 0), 0);
  EXPECT_THAT(std::string(buf), ::testing::ContainsRegex(
                                    "^HTTP/1.1 (503 .*the limit per user|408 .*did not arrive)"));
  for (int fd : held) ::close(fd);
  (*server)->stop();
}

}  // namespace
}  // namespace colo
