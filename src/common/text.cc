#include "common/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

namespace colo {

std::string_view trim_space(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string c_string(const char* buffer, size_t size) {
  return std::string(buffer, strnlen(buffer, size));
}

namespace {

// The length of the control character at `s[i]` (1, or 2 for a C1 in UTF-8); 0 if none.
size_t control_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x20 || c == 0x7f) return 1;
  if (c == 0xc2 && i + 1 < s.size()) {
    const auto next = static_cast<unsigned char>(s[i + 1]);
    if (next >= 0x80 && next <= 0x9f) return 2;
  }
  return 0;
}

}  // namespace

std::optional<size_t> control_char_at(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (control_length(s, i) > 0) return i;
  }
  return std::nullopt;
}

std::string strip_control_chars(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = control_length(s, i); n > 0) {
      i += n;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string escape_html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1);
  std::vector<size_t> cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string shorten_text(std::string_view s, size_t max_lines, size_t max_bytes,
                         std::string_view more) {
  size_t end = std::min(s.size(), max_bytes);
  size_t lines = 1;
  for (size_t i = 0; i < end; ++i) {
    if (s[i] == '\n' && ++lines > max_lines) {
      end = i;
      break;
    }
  }
  if (end == s.size()) return std::string(s);
  // Not inside a UTF-8 character: back off its continuation bytes.
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xc0) == 0x80) --end;
  return fmt::format("{}... ({} more bytes: {})", s.substr(0, end), s.size() - end, more);
}

}  // namespace colo
