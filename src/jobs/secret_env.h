// Which job environment values are secrets, and the environment as colo
// records and reports it: secret values replaced, so the store and reports
// never hold an API key. The job itself always gets the real values.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace colo {

// What a secret value is recorded as.
inline constexpr std::string_view kRedactedValue = "<redacted>";

// True when the name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or
// CREDENTIAL, in any case ("WANDB_API_KEY", "hf_token").
bool is_secret_env_name(std::string_view name);

// `env` with the value of every secret-looking name replaced by kRedactedValue.
std::map<std::string, std::string> redact_secret_env(const std::map<std::string, std::string>& env);

}  // namespace colo
