#include "jobs/job_features.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

TEST(JobFeaturesTest, ReadsTheFlagsOfATrainingScript) {
  JobFeatures f = job_features({"python3", "bench/train.py", "--model", "resnet50", "--batch-size",
                                "256", "--image-size=64", "--lr", "0.1"});
  EXPECT_EQ(f.script, "train.py");
  EXPECT_EQ(f.model, "resnet50");
  EXPECT_EQ(f.batch_size, 256);
  EXPECT_EQ(f.image_size, 64);
  EXPECT_FALSE(f.seq_len);
  EXPECT_EQ(f.size(), 256.0 * 64 * 64);
  EXPECT_EQ(f.describe(), "resnet50, batch 256, 64 px");
}

TEST(JobFeaturesTest, ReadsUnderscoresShortFlagsAndHydraOverrides) {
  JobFeatures f = job_features({"torchrun", "--nproc_per_node", "2", "finetune.py",
                                "--arch=ViT_B16", "-b", "32", "data.max_seq_length=512"});
  EXPECT_EQ(f.script, "finetune.py");
  EXPECT_EQ(f.model, "vit_b16");
  EXPECT_EQ(f.batch_size, 32);
  EXPECT_EQ(f.seq_len, 512);
  EXPECT_EQ(job_features({"python", "t.py", "model=timm/ResNet26", "batch_size=64"}).model,
            "resnet26");
}

TEST(JobFeaturesTest, LeavesUnknownWhatItDoesNotRecognise) {
  JobFeatures f = job_features({"python3", "-m", "mypackage.train", "--epochs", "3"});
  EXPECT_EQ(f.model, "");
  EXPECT_FALSE(f.batch_size);
  EXPECT_FALSE(f.size());
  EXPECT_EQ(f.describe(), "");
  EXPECT_FALSE(job_features({"./train", "--batch-size", "lots"}).batch_size);
  EXPECT_EQ(job_features({"./train"}).script, "train");
  EXPECT_EQ(job_features({}).script, "");
}

}  // namespace
}  // namespace colo
