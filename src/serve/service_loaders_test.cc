#include "serve/service_loaders.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace colo {
namespace {

using ::testing::HasSubstr;

// A job of `owner` reading dataset "imgs", its [data.imgs] table sent with
// it when `table`, of the given format.
HeldJob loader_reader(int64_t id, uid_t owner, bool table,
                      const std::string& format = "imagefolder") {
  HeldJob h;
  h.id = id;
  h.owner = owner;
  h.job.spec.name = "r" + std::to_string(id);
  h.job.spec.dataset = "imgs";
  if (table) {
    DataSourceSpec d;
    d.name = "imgs";
    d.path = "/nonexistent/imgs";
    d.format = format;
    d.ring_bytes = uint64_t{1} << 20;
    d.source = "jobs.toml:3";
    h.job.spec.data_source = d;
  }
  return h;
}

ServiceJobRow row_of(const HeldJob& h) {
  ServiceJobRow row;
  row.id = h.id;
  row.owner_uid = h.owner;
  row.name = h.job.spec.name;
  return row;
}

class ServiceLoadersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "service_loaders.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    auto store = RunStore::open(":memory:");
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
    NewRun run;
    run.started_ms = clock_.now_ms();
    run.mechanism = "naive";
    run.backend = "sim";
    run.host = "h";
    run.colo_pid = getpid();
    run_id_ = *store_->begin_run(run);
    writer_ = std::make_unique<StoreWriter>(*store_, clock_);
  }
  // Loaders run by `binary` (one that exits at once never accepts consumers).
  std::unique_ptr<ServiceLoaders> loaders(const std::string& binary) {
    return std::make_unique<ServiceLoaders>(
        clock_, *writer_, log_, ServiceLoadersOptions{binary, dir_ + "/serve", 10'000, run_id_});
  }

  SystemClock clock_;
  std::string dir_;
  std::unique_ptr<RunStore> store_;
  std::unique_ptr<StoreWriter> writer_;
  int64_t run_id_ = 0;
  std::ostringstream log_;
};

TEST_F(ServiceLoadersTest, AJobWhoseLoaderCannotLaunchIsRefusedSayingWhy) {
  struct Case {
    std::string what;
    HeldJob job;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"its table did not come with it", loader_reader(1, 0, false),
       "it reads dataset 'imgs', but its [data.imgs] table did not come with it"},
      {"its table names no format colo reads", loader_reader(2, 0, true, "tarball"), "jobs.toml:3"},
      {"its program cannot be started", loader_reader(3, 0, true), "data loader imgs.u0.0"},
  };
  auto l = loaders("/nonexistent/colo");
  for (const Case& c : cases) {
    Result<std::optional<HeldJob>> attached = l->attach(row_of(c.job), c.job);
    ASSERT_FALSE(attached.ok()) << c.what;
    EXPECT_THAT(attached.error().message(), HasSubstr(c.error)) << c.what;
    EXPECT_EQ(l->take_held(c.job.id), std::nullopt) << c.what;
    l->detach(c.job.id);  // not attached: nothing to do
  }
}

// colo_serve_test's ALoaderThatNeverOpensItsDatasetHoldsOnlyItsOwnReaders,
// with a loader that ends at once: its readers wait held, then fail with
// the reason; another user's reader of the same table has a loader of its own.
TEST_F(ServiceLoadersTest, ReadersWaitHeldUntilTheirLoaderStartsAndFailWithItsReason) {
  auto l = loaders("/bin/false");
  for (const HeldJob& h :
       {loader_reader(1, 0, true), loader_reader(2, 0, true), loader_reader(3, 1000, true)}) {
    Result<std::optional<HeldJob>> attached = l->attach(row_of(h), h);
    ASSERT_TRUE(attached.ok()) << attached.error().message();
    EXPECT_EQ(*attached, std::nullopt) << "held while its loader starts";
  }
  EXPECT_THAT(log_.str(), HasSubstr("data loader 'imgs.u0.0'"));
  EXPECT_THAT(log_.str(), HasSubstr("data loader 'imgs.u1000.1'"));
  std::optional<HeldJob> taken = l->take_held(2);  // cancelled while held
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->job.spec.name, "r2");
  EXPECT_EQ(l->take_held(2), std::nullopt);
  l->detach(2);
  std::vector<std::pair<int64_t, std::string>> failed;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (failed.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    l->poll([](HeldJob h) { ADD_FAILURE() << "job " << h.id << " handed on"; },
            [&](const HeldJob& h, const std::string& why) { failed.emplace_back(h.id, why); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(failed.size(), 2u) << log_.str();
  for (const auto& [id, why] : failed) {
    EXPECT_TRUE(id == 1 || id == 3) << id;
    EXPECT_THAT(why, HasSubstr("its shared data loader could not start: ")) << id;
  }
  EXPECT_EQ(l->take_held(1), std::nullopt);
  EXPECT_FALSE(l->poll([](HeldJob) {}, [](const HeldJob&, const std::string&) {}))
      << "no loader left";
}

}  // namespace
}  // namespace colo
