#include "jobs/secret_env.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

TEST(SecretEnvTest, NamesThatLookSecret) {
  struct Case {
    const char* name;
    bool secret;
  };
  const Case cases[] = {
      {"WANDB_API_KEY", true},
      {"HF_TOKEN", true},
      {"hf_token", true},
      {"AWS_SECRET_ACCESS_KEY", true},
      {"PGPASSWORD", true},
      {"DB_PASSWD", true},
      {"GOOGLE_APPLICATION_CREDENTIALS", true},
      {"SSH_KEYFILE", true},
      {"PATH", false},
      {"CUDA_VISIBLE_DEVICES", false},
      {"OMP_NUM_THREADS", false},
      {"LR", false},
      {"", false},
  };
  for (const Case& c : cases) EXPECT_EQ(is_secret_env_name(c.name), c.secret) << c.name;
}

TEST(SecretEnvTest, RedactsOnlyTheValuesOfSecretNames) {
  auto redacted = redact_secret_env({{"WANDB_API_KEY", "abc123"}, {"SEED", "7"}, {"HF_TOKEN", ""}});
  EXPECT_EQ(redacted.at("WANDB_API_KEY"), "<redacted>");
  EXPECT_EQ(redacted.at("SEED"), "7");
  EXPECT_EQ(redacted.at("HF_TOKEN"), "<redacted>");
  EXPECT_EQ(redacted.size(), 3U);
}

}  // namespace
}  // namespace colo
