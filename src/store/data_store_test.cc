// Tests of the data-loader half of RunStore (data_store.cc) and migration 4.
#include <gtest/gtest.h>

#include "store/run_store.h"

namespace colo {
namespace {

TEST(DataStore, RecordsLoadersAndTheirConsumersPerRun) {
  auto opened = RunStore::open(":memory:");
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  RunStore& store = **opened;
  NewRun run;
  run.started_ms = 1'700'000'000'000;
  run.mechanism = "naive";
  run.backend = "sim";
  Result<int64_t> run_id = store.begin_run(run);
  ASSERT_TRUE(run_id.ok());
  JobSpec spec;
  spec.name = "a";
  spec.command = {"x"};
  Result<std::vector<int64_t>> jobs = store.add_jobs(*run_id, {spec}, {"a.log"}, run.started_ms);
  ASSERT_TRUE(jobs.ok());

  DataLoaderRow l;
  l.name = "imagenet";
  l.path = "/data/train";
  l.format = "imagefolder";
  l.pid = 42;
  l.threads = 4;
  l.cpu_ms = 12'345;
  l.wall_ms = 60'000;
  l.samples_decoded = 9000;
  DataConsumerRow c;
  c.job_id = (*jobs)[0];
  c.job_name = "a";
  c.pid = 77;
  c.batch_size = 64;
  c.duration_ms = 50'000;
  c.wait_ms = 1'000;
  c.detached = "";
  l.consumers.push_back(c);
  c.job_id.reset();
  c.job_name = "outsider";
  c.detached = "detached by the shared data loader: ...";
  l.consumers.push_back(c);
  ASSERT_TRUE(store.add_data_loader(*run_id, l).ok());
  DataLoaderRow empty;
  empty.name = "cifar";
  empty.note = "the loader left no statistics";
  ASSERT_TRUE(store.add_data_loader(*run_id, empty).ok());

  Result<std::vector<DataLoaderRow>> back = store.data_loaders(*run_id);
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].name, "imagenet");
  EXPECT_EQ((*back)[0].cpu_ms, 12'345);
  EXPECT_FALSE((*back)[0].peak_rss_bytes);
  ASSERT_EQ((*back)[0].consumers.size(), 2u);
  EXPECT_EQ((*back)[0].consumers[0].job_id, (*jobs)[0]);
  EXPECT_EQ((*back)[0].consumers[0].wait_ms, 1'000);
  EXPECT_FALSE((*back)[0].consumers[1].job_id);
  EXPECT_EQ((*back)[0].consumers[1].job_name, "outsider");
  EXPECT_TRUE((*back)[1].consumers.empty());
  EXPECT_EQ((*back)[1].note, "the loader left no statistics");
  EXPECT_TRUE(store.data_loaders(*run_id + 1)->empty());
}

}  // namespace
}  // namespace colo
