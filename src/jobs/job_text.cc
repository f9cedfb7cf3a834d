#include "jobs/job_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "jobs/placeholders.h"

namespace colo {

bool is_job_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

bool is_env_name(std::string_view s) {
  return is_param_name(s) && !std::isdigit(static_cast<unsigned char>(s.front()));
}

std::optional<std::string> first_control_char(std::string_view text) {
  auto bad = std::find_if(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (bad == text.end()) return std::nullopt;
  return fmt::format("\\x{:02x}", static_cast<unsigned char>(*bad));
}

std::string format_float(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

bool only_white_space(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

}  // namespace colo
