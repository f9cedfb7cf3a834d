// NvmlMigControl against the stand-in NVML library, through dlopen.
#include "gpu/nvml_mig_control.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_nvml/fake_nvml_loader.h"
#include "gpu/nvml_backend.h"

namespace colo {
namespace {

using ::testing::HasSubstr;

class NvmlMigControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake_.loaded() && fake_.has_mig()) << dlerror();
    fake_.reset();
    fake_.mig_set("model", "A100-40GB");
    fake_.mig_set("mode", "1");
    auto backend = NvmlBackend::create(FAKE_NVML_PATH, clock_);
    ASSERT_TRUE(backend.ok()) << backend.error().message();
    backend_ = std::move(backend).value();
    mig_ = backend_->mig_control();
    ASSERT_NE(mig_, nullptr);
  }

  FakeNvml fake_{FAKE_NVML_PATH};
  FakeClock clock_;
  std::unique_ptr<NvmlBackend> backend_;
  MigControl* mig_ = nullptr;
};

TEST_F(NvmlMigControlTest, CreatesListsAndDestroysInstances) {
  auto mode = mig_->mig_mode(0);
  ASSERT_TRUE(mode.ok()) << mode.error().message();
  EXPECT_TRUE(mode->current);

  auto gi = mig_->create_gpu_instance(0, 9, 4);  // 3g.20gb at memory slice 4
  ASSERT_TRUE(gi.ok()) << gi.error().message();
  EXPECT_EQ(gi->profile_id, 9);
  EXPECT_EQ(gi->start, 4);
  EXPECT_EQ(gi->size, 4);
  auto a = mig_->create_compute_instance(0, gi->id, 2);
  auto b = mig_->create_compute_instance(0, gi->id, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(fake_.mig_describe(), "gpu0 gi1 p9 @4 [ci0/2 ci1/1]");

  auto gis = mig_->gpu_instances(0);
  ASSERT_TRUE(gis.ok()) << gis.error().message();
  ASSERT_EQ(gis->size(), 1u);
  EXPECT_EQ((*gis)[0].id, gi->id);
  auto cis = mig_->compute_instances(0, gi->id);
  ASSERT_TRUE(cis.ok()) << cis.error().message();
  ASSERT_EQ(cis->size(), 2u);
  EXPECT_EQ((*cis)[0].slice_count, 2);
  EXPECT_EQ((*cis)[1].slice_count, 1);

  auto devices = mig_->mig_devices(0);
  ASSERT_TRUE(devices.ok()) << devices.error().message();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[1].gpu_instance_id, gi->id);
  EXPECT_EQ((*devices)[1].compute_instance_id, b->id);
  EXPECT_EQ((*devices)[1].uuid.rfind("MIG-", 0), 0u);
  EXPECT_NE((*devices)[0].uuid, (*devices)[1].uuid);
  EXPECT_EQ((*devices)[0].memory_total_bytes, uint64_t{20096} << 20);

  // A GPU instance with compute instances is in use.
  auto busy = mig_->destroy_gpu_instance(0, gi->id);
  ASSERT_FALSE(busy.ok());
  EXPECT_THAT(busy.error().message(), HasSubstr("processes still use"));
  EXPECT_EQ(*mig_->destroy_compute_instance(0, gi->id, a->id), true);
  EXPECT_EQ(*mig_->destroy_compute_instance(0, gi->id, b->id), true);
  EXPECT_EQ(*mig_->destroy_compute_instance(0, gi->id, b->id), false);  // already gone
  EXPECT_EQ(*mig_->destroy_gpu_instance(0, gi->id), true);
  EXPECT_EQ(*mig_->destroy_gpu_instance(0, gi->id), false);
  EXPECT_EQ(fake_.mig_describe(), "");
}

TEST_F(NvmlMigControlTest, RefusalsSayWhatToDo) {
  ASSERT_TRUE(mig_->create_gpu_instance(0, 9, 0).ok());
  auto overlap = mig_->create_gpu_instance(0, 14, 2);  // 2g.10gb inside the 3g.20gb
  ASSERT_FALSE(overlap.ok());
  EXPECT_THAT(overlap.error().message(), HasSubstr("Insufficient"));
  EXPECT_THAT(overlap.error().message(), HasSubstr("not enough free MIG slices"));

  fake_.mig_set("permission", "0");
  auto denied = mig_->create_gpu_instance(0, 19, 4);
  ASSERT_FALSE(denied.ok());
  EXPECT_THAT(denied.error().message(), HasSubstr("needs root"));

  fake_.mig_set("permission", "1");
  fake_.mig_set("mode", "0");
  auto off = mig_->create_gpu_instance(0, 19, 4);
  ASSERT_FALSE(off.ok());
  EXPECT_THAT(off.error().message(), HasSubstr("MIG mode is disabled"));

  auto bad = mig_->create_compute_instance(0, 1, 5);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr("1, 2, 3, 4 or 7"));
}

TEST_F(NvmlMigControlTest, MigModeChangesOnlyAfterAReset) {
  fake_.mig_set("mode", "0");
  ASSERT_TRUE(mig_->set_mig_mode(0, true).ok());
  auto mode = mig_->mig_mode(0);
  ASSERT_TRUE(mode.ok());
  EXPECT_FALSE(mode->current);
  EXPECT_TRUE(mode->pending);
  fake_.mig_set("permission", "0");
  auto denied = mig_->set_mig_mode(0, false);
  ASSERT_FALSE(denied.ok());
  EXPECT_THAT(denied.error().message(), HasSubstr("needs root"));
}

TEST(NvmlMigControlMinimal, MissingFunctionsAreNamed) {
  FakeNvml fake(FAKE_NVML_MINIMAL_PATH);
  ASSERT_TRUE(fake.loaded());
  fake.reset();
  FakeClock clock;
  auto backend = NvmlBackend::create(FAKE_NVML_MINIMAL_PATH, clock);
  ASSERT_TRUE(backend.ok());
  auto gi = (*backend)->mig_control()->create_gpu_instance(0, 9, 0);
  ASSERT_FALSE(gi.ok());
  EXPECT_THAT(gi.error().message(), HasSubstr("nvmlDeviceCreateGpuInstanceWithPlacement"));
}

}  // namespace
}  // namespace colo
