#include "jobs/placeholders.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "common/text.h"

namespace colo {
namespace {

// A piece of text: literal text, or a placeholder's name.
struct TextPiece {
  std::string text;
  bool placeholder = false;
};

std::vector<TextPiece> split_placeholders(std::string_view text) {
  std::vector<TextPiece> pieces;
  auto literal = [&](std::string_view part) {
    if (pieces.empty() || pieces.back().placeholder) pieces.push_back({"", false});
    pieces.back().text += part;
  };
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      bool escaped = i + 1 < text.size() && text[i + 1] == '{';
      size_t name_start = i + (escaped ? 2 : 1);
      size_t close = text.find('}', name_start);
      if (close != std::string_view::npos) {
        std::string name(text.substr(name_start, close - name_start));
        if (is_param_name(name)) {
          if (!escaped) {
            pieces.push_back({name, true});
            i = close + 1;
            continue;
          }
          if (close + 1 < text.size() && text[close + 1] == '}') {
            literal("{" + name + "}");
            i = close + 2;
            continue;
          }
        }
      }
    }
    literal(text.substr(i, 1));
    ++i;
  }
  return pieces;
}

// "grid parameters: a, b", or "this job has no grid".
std::string known_params(const std::set<std::string>& params) {
  if (params.empty()) return "this job has no grid";
  std::string known;
  for (const std::string& p : params) known += (known.empty() ? "" : ", ") + p;
  return fmt::format("grid parameters: {}", known);
}

}  // namespace

bool is_builtin_placeholder(std::string_view name) {
  return std::find(kBuiltinPlaceholders.begin(), kBuiltinPlaceholders.end(), name) !=
         kBuiltinPlaceholders.end();
}

bool is_param_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::optional<std::string> check_placeholders(std::string_view text,
                                              const std::set<std::string>& params) {
  for (const TextPiece& piece : split_placeholders(text)) {
    if (!piece.placeholder || params.count(piece.text) > 0 || is_builtin_placeholder(piece.text))
      continue;
    return fmt::format(
        "unknown placeholder '{{{}}}'{} ({}; write '{{{{{}}}}}' for the literal text)", piece.text,
        did_you_mean(piece.text, params), known_params(params), piece.text);
  }
  return std::nullopt;
}

std::string substitute(std::string_view text, const std::map<std::string, std::string>& values) {
  std::string out;
  for (const TextPiece& piece : split_placeholders(text)) {
    out += piece.placeholder ? values.at(piece.text) : piece.text;
  }
  return out;
}

std::string template_text(std::string_view text) {
  std::string out;
  for (const TextPiece& piece : split_placeholders(text)) {
    out += piece.placeholder ? "\x1f{" + piece.text + "}" : piece.text;
  }
  return out;
}

std::optional<std::string> check_resource_param(std::string_view entry,
                                                const std::set<std::string>& params) {
  std::string_view name = entry;
  if (size_t caret = entry.find('^'); caret != std::string_view::npos) {
    name = entry.substr(0, caret);
    std::string_view power = entry.substr(caret + 1);
    if (power != "1" && power != "2" && power != "3") {
      return fmt::format("'{}': the power after '^' must be 1, 2 or 3", entry);
    }
  }
  if (params.count(std::string(name)) > 0) return std::nullopt;
  return fmt::format("'{}' names no grid parameter{} ({})", name, did_you_mean(name, params),
                     known_params(params));
}

}  // namespace colo
