#include "jobs/secret_env.h"

#include <array>
#include <cctype>

namespace colo {

bool is_secret_env_name(std::string_view name) {
  constexpr std::array<std::string_view, 6> kMarks = {"KEY",      "TOKEN",  "SECRET",
                                                      "PASSWORD", "PASSWD", "CREDENTIAL"};
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (std::string_view mark : kMarks) {
    if (upper.find(mark) != std::string::npos) return true;
  }
  return false;
}

std::map<std::string, std::string> redact_secret_env(
    const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> out = env;
  for (auto& [name, value] : out) {
    if (is_secret_env_name(name)) value = kRedactedValue;
  }
  return out;
}

}  // namespace colo
