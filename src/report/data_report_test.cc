#include "report/data_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(DataReport, ShowsLoaderCpuAndEachConsumersWaitingShare) {
  DataLoaderRow l;
  l.name = "imagenet";
  l.path = "/data/train";
  l.format = "imagefolder";
  l.dataset_size = 1000;
  l.threads = 4;
  l.cpu_ms = 30'000;
  l.wall_ms = 60'000;
  l.peak_rss_bytes = 512ll << 20;
  l.samples_decoded = 5000;
  DataConsumerRow c;
  c.job_name = "resnet50#1";
  c.batch_size = 128;
  c.samples = 4000;
  c.epochs = 4;
  c.duration_ms = 50'000;
  c.wait_ms = 2'500;
  l.consumers.push_back(c);
  c.job_name = "";
  c.pid = 99;
  c.detached = "detached by the shared data loader: ...";
  l.consumers.push_back(c);
  const std::string text = format_data_loaders({l});
  EXPECT_THAT(text, HasSubstr("imagenet: /data/train (imagefolder, 1000 samples), 4 threads"));
  EXPECT_THAT(text, HasSubstr("CPU 30.0s over 1m00s (0.50 cores), peak memory 512 MiB"));
  EXPECT_THAT(text, HasSubstr("resnet50#1"));
  EXPECT_THAT(text, HasSubstr("5.0%"));
  EXPECT_THAT(text, HasSubstr("pid 99"));
  EXPECT_THAT(text, HasSubstr("detached by the shared data loader"));
  EXPECT_EQ(format_data_loaders({}), "");

  nlohmann::json j = data_loaders_json({l});
  EXPECT_EQ(j[0]["cpu_ms"], 30'000);
  EXPECT_TRUE(j[0]["decode_errors"].is_null());
  EXPECT_EQ(j[0]["consumers"][0]["wait_ms"], 2'500);
  EXPECT_TRUE(j[0]["consumers"][0]["job_id"].is_null());
}

}  // namespace
}  // namespace colo
