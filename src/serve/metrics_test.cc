#include "serve/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

#include "common/units.h"

namespace colo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr UnixMillis kScrapeMs = 1'700'000'100'000;

QueueJob job(int64_t id, const std::string& state, std::optional<int> gpu) {
  QueueJob j;
  j.id = id;
  j.name = "resnet26#" + std::to_string(id);
  j.owner = "alice";
  j.state = state;
  j.gpu = gpu;
  j.attempts = state == "queued" ? 0 : 1;
  return j;
}

// Two GPUs: gpu0 sampled, running job 12; gpu1 never sampled; job 13 queued.
ServiceSnapshot scraped_service() {
  ServiceSnapshot s;
  s.time_ms = kScrapeMs;
  s.service.host = "box";
  s.service.mechanism = "mps";
  s.service.mps_users = "shared";
  s.service.policy = "auto";
  s.service.backend = "nvml";
  s.service.state = "running";
  s.service.started_ms = kScrapeMs - 60'000;
  DeviceSample d;
  d.device = 0;
  d.time_ms = kScrapeMs - 500;
  d.sm_active_pct = 45.5;
  d.sm_occupancy_pct = 20;
  d.dram_active_pct = 10;
  d.gpu_util_pct = 97;
  d.memory_used_bytes = 30 * kGiB;
  d.power_w = 312.5;
  d.energy_mj = 123456;
  d.pcie_rx_mib_per_s = 2;
  d.sm_clock_mhz = 1980;
  s.gpus.push_back({0, "NVIDIA H200", "GPU-0", 141 * kGiB, 1, d});
  s.gpus.push_back({1, "NVIDIA H200", "GPU-1", 141 * kGiB, 0, std::nullopt});
  QueueJob running = job(12, "running", 0);
  running.epoch = 3;
  running.samples_per_s = 1234.5;
  running.peak_memory_bytes = 12 * kGiB;
  running.predicted_end_ms = kScrapeMs + 250'000;
  s.jobs = {running, job(13, "queued", std::nullopt), job(9, "ok", std::nullopt)};
  return s;
}

// "name{labels}" -> value, for every sample line; every line is checked
// against the text format on the way.
std::map<std::string, std::string> samples(const std::string& text) {
  static const std::regex kSample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*",?)*\})? (\S+)$)");
  static const std::regex kComment(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0) {
      EXPECT_TRUE(std::regex_match(line, kComment)) << line;
      continue;
    }
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, kSample)) << line;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

constexpr const char* kGpu0 =
    R"(gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA H200",Hostname="box")";

TEST(Metrics, GpuMetricsTakeDcgmExporterNamesUnitsAndLabels) {
  const std::string text = prometheus_metrics(scraped_service());
  std::map<std::string, std::string> m = samples(text);
  const std::string gpu0 = std::string(kGpu0) + R"(,hpc_job="12",user="alice")";
  struct Want {
    const char* name;
    const char* value;
  };
  const Want want[] = {
      {"DCGM_FI_PROF_SM_ACTIVE", "0.455"},  // ratios, not percent
      {"DCGM_FI_PROF_SM_OCCUPANCY", "0.2"},
      {"DCGM_FI_PROF_DRAM_ACTIVE", "0.1"},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", "2097152"},  // bytes per second
      {"DCGM_FI_DEV_GPU_UTIL", "97"},
      {"DCGM_FI_DEV_SM_CLOCK", "1980"},
      {"DCGM_FI_DEV_FB_USED", "30720"},  // MiB
      {"DCGM_FI_DEV_FB_FREE", "113664"},
      {"DCGM_FI_DEV_POWER_USAGE", "312.5"},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "123456"},  // mJ
  };
  for (const Want& w : want) {
    const std::string key = std::string(w.name) + "{" + gpu0 + "}";
    EXPECT_EQ(m[key], w.value) << key << "\n" << text;
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + w.name)) << "one TYPE line per family";
  }
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"));
  // Values the sampler does not have are left out, family and all.
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")));
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_PROF_PCIE_TX_BYTES")));
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_PROF_SM_ACTIVE{gpu=\"1\""))) << "gpu1 has no sample";
}

TEST(Metrics, AGpuSharedByTwoJobsHasNoJobLabel) {
  ServiceSnapshot s = scraped_service();
  s.jobs.push_back(job(14, "running", 0));
  std::map<std::string, std::string> m = samples(prometheus_metrics(s));
  EXPECT_EQ(m[std::string("DCGM_FI_PROF_SM_ACTIVE{") + kGpu0 + "}"], "0.455");
}

TEST(Metrics, AStalledJobIsCountedAndLabelledStalled) {
  ServiceSnapshot s = scraped_service();
  EXPECT_EQ(samples(prometheus_metrics(s))["colo_jobs_stalled"], "0");
  s.jobs[0].stalled = "stalled: no progress for 74 s after epoch 2";
  std::map<std::string, std::string> m = samples(prometheus_metrics(s));
  EXPECT_EQ(m["colo_jobs_stalled"], "1");
  const std::string labels =
      std::string(R"(hpc_job="12",user="alice",name="resnet26#12",)") + kGpu0;
  EXPECT_EQ(m["colo_job_info{" + labels + R"(,state="stalled"})"], "1");
}

TEST(Metrics, ColoMetricsPerJobAndForTheQueue) {
  std::map<std::string, std::string> m = samples(prometheus_metrics(scraped_service()));
  const std::string labels =
      std::string(R"(hpc_job="12",user="alice",name="resnet26#12",)") + kGpu0;
  EXPECT_EQ(m["colo_job_epoch{" + labels + "}"], "3");
  EXPECT_EQ(m["colo_job_samples_per_second{" + labels + "}"], "1234.5");
  EXPECT_EQ(m["colo_job_gpu_memory_peak_bytes{" + labels + "}"], "12884901888");
  EXPECT_EQ(m["colo_job_attempts{" + labels + "}"], "1");
  EXPECT_EQ(m["colo_job_predicted_end_timestamp_seconds{" + labels + "}"], "1700000350");
  EXPECT_EQ(m["colo_job_info{" + labels + R"(,state="running"})"], "1");
  EXPECT_EQ(m[R"(colo_job_info{hpc_job="13",user="alice",name="resnet26#13",state="queued"})"],
            "1");
  EXPECT_EQ(m.count(R"(colo_job_epoch{hpc_job="13",user="alice",name="resnet26#13"})"), 0u);
  EXPECT_EQ(m["colo_queue_length"], "1");
  EXPECT_EQ(m["colo_jobs_running"], "1");
  EXPECT_EQ(m[std::string("colo_gpu_jobs_running{") + kGpu0 + "}"], "1");
  EXPECT_EQ(
      m[R"(colo_gpu_jobs_running{gpu="1",UUID="GPU-1",device="nvidia1",modelName="NVIDIA H200",Hostname="box"})"],
      "0");
  EXPECT_EQ(m[R"(colo_service_mechanism_up{mechanism="mps"})"], "1");
  EXPECT_EQ(
      m[R"(colo_service_info{mechanism="mps",mps_users="shared",policy="auto",backend="nvml",state="running",Hostname="box"})"],
      "1");
  for (const auto& [key, value] : m) EXPECT_EQ(key.find("hpc_job=\"9\""), std::string::npos) << key;
}

// Issue 56, item 6: a protected job's floor, its latest speed of solo, the
// share and time of its steady time below the floor; nothing of the kind
// for other jobs, and no speed for a protected job not running.
TEST(Metrics, AProtectedJobsFloorSpeedOfSoloAndTimeBelowIt) {
  ServiceSnapshot s = scraped_service();
  QueueJob& running = s.jobs[0];
  running.qos = "protected";
  running.min_speed = 0.9;
  running.speed_of_solo = 0.84;
  running.below_floor_share = 0.25;
  running.steady_ms = 120'000;
  running.below_floor_ms = 30'000;
  QueueJob& queued = s.jobs[1];
  queued.qos = "protected";
  queued.min_speed = 0.8;
  queued.speed_of_solo = 0.5;  // from an earlier attempt
  const std::string text = prometheus_metrics(s);
  std::map<std::string, std::string> m = samples(text);
  const std::string labels =
      std::string(R"(hpc_job="12",user="alice",name="resnet26#12",)") + kGpu0;
  struct Want {
    const char* name;
    const char* type;
    const char* value;
  };
  for (const Want& w : std::vector<Want>{{"colo_job_min_speed", "gauge", "0.9"},
                                         {"colo_job_speed_of_solo", "gauge", "0.84"},
                                         {"colo_job_below_floor_ratio", "gauge", "0.25"},
                                         {"colo_job_below_floor_seconds_total", "counter", "30"},
                                         {"colo_job_steady_seconds_total", "counter", "120"}}) {
    EXPECT_EQ(m[std::string(w.name) + "{" + labels + "}"], w.value) << w.name << "\n" << text;
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + w.name + " " + w.type));
  }
  const std::string queued_labels = R"({hpc_job="13",user="alice",name="resnet26#13"})";
  EXPECT_EQ(m["colo_job_min_speed" + queued_labels], "0.8");
  EXPECT_EQ(m.count("colo_job_speed_of_solo" + queued_labels), 0U);
  // Without a protected job, none of the families appears.
  EXPECT_THAT(prometheus_metrics(scraped_service()), Not(HasSubstr("floor")));
  EXPECT_THAT(prometheus_metrics(scraped_service()), Not(HasSubstr("colo_job_min_speed")));
}

TEST(Metrics, EachUsersUsageWeightAndJobsAndWhyAQueuedJobWaits) {
  ServiceSnapshot s = scraped_service();
  s.owners["alice"] = OwnerJobs{1, 1, 90'500, 2, 600'000};
  s.jobs[1].reason = "quota: alice runs 2.0 GPUs' worth, at most 2 per user";
  std::map<std::string, std::string> m = samples(prometheus_metrics(s));
  EXPECT_EQ(m[R"(colo_user_usage_seconds{user="alice"})"], "90.5");
  EXPECT_EQ(m[R"(colo_user_usage_seconds_total{user="alice"})"], "600");
  EXPECT_EQ(m[R"(colo_user_fair_share_weight{user="alice"})"], "2");
  EXPECT_EQ(m[R"(colo_user_jobs{user="alice",state="queued"})"], "1");
  EXPECT_EQ(m[R"(colo_user_jobs{user="alice",state="running"})"], "1");
  EXPECT_EQ(
      m[R"(colo_job_info{hpc_job="13",user="alice",name="resnet26#13",state="queued",waiting_for="quota"})"],
      "1");
}

// `job` is Prometheus's own label (the scrape job's name): under
// honor_labels a target's `job` would replace it. The owning job is
// `hpc_job`, as dcgm-exporter names it.
TEST(Metrics, NoSeriesCarriesPrometheusesOwnJobLabel) {
  std::map<std::string, std::string> m = samples(prometheus_metrics(scraped_service()));
  ASSERT_FALSE(m.empty());
  int owned = 0;
  for (const auto& [key, value] : m) {
    EXPECT_EQ(key.find("{job="), std::string::npos) << key;
    EXPECT_EQ(key.find(",job="), std::string::npos) << key;
    owned += key.find("hpc_job=\"12\"") != std::string::npos;
  }
  EXPECT_GT(owned, 0);
}

TEST(Metrics, LabelValuesAreEscaped) {
  ServiceSnapshot s = scraped_service();
  s.jobs[0].name = "a \"quoted\" \\ name\nnext";
  const std::string text = prometheus_metrics(s);
  EXPECT_THAT(text, HasSubstr(R"(name="a \"quoted\" \\ name\nnext")"));
  samples(text);  // every line still parses
}

}  // namespace
}  // namespace colo
