#include "export/mlflow_format.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <vector>

namespace colo {
namespace {

// The code point of the UTF-8 sequence at text[i] and its length in bytes;
// length 0 when no valid sequence starts there.
struct Decoded {
  char32_t code_point = 0;
  size_t length = 0;
};

Decoded decode_utf8(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {lead, 1};
  size_t length = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, cp = lead & 0x1F, min = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, cp = lead & 0x0F, min = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return {};
  }
  if (i + length > text.size()) return {};
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {};
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
  return {cp, length};
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Characters a single-quoted YAML scalar cannot carry as they are: those
// YAML forbids raw in a file (PyYAML's reader refuses them) and the line
// breaks it would fold into spaces.
bool needs_escape(char32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF;
}

bool is_ascii_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

// Whether `text` (valid UTF-8) reads back as this string when written plain.
bool plain_is_safe(std::string_view text) {
  if (text.empty()) return false;
  if (!is_ascii_letter(text.front()) && text.front() != '/') return false;
  for (char c : text) {
    if (!is_ascii_letter(c) && !is_ascii_digit(c) && c != '_' && c != '.' && c != '/' && c != ':' &&
        c != '-') {
      return false;
    }
  }
  if (text.back() == ':') return false;
  std::string lower;
  for (char c : text) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  // YAML 1.1's booleans and null (PyYAML resolves all but y and n; quoting
  // those too costs nothing).
  static constexpr std::array<std::string_view, 9> kWords = {"y",     "n",  "yes", "no",  "true",
                                                             "false", "on", "off", "null"};
  for (std::string_view word : kWords) {
    if (lower == word) return false;
  }
  return true;
}

std::string double_quoted(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const Decoded d = decode_utf8(text, i);  // text is valid UTF-8
    const char32_t cp = d.code_point;
    if (cp == '"') {
      out += "\\\"";
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (needs_escape(cp)) {
      out += cp <= 0xFF ? fmt::format("\\x{:02X}", static_cast<unsigned>(cp))
                        : fmt::format("\\u{:04X}", static_cast<unsigned>(cp));
    } else {
      out += text.substr(i, d.length);
    }
    i += d.length;
  }
  return out + "\"";
}

// FNV-1a, 64 bits, then SplitMix64's finalizer so that every bit of the
// result depends on every byte.
uint64_t hash64(std::string_view text, uint64_t seed) {
  uint64_t h = 14695981039346656037ULL ^ seed;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBULL;
  h ^= h >> 31;
  return h;
}

std::vector<std::string> split_path(std::string_view key) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= key.size()) {
    const size_t slash = key.find('/', start);
    const size_t end = slash == std::string_view::npos ? key.size() : slash;
    parts.emplace_back(key.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string join_path(const std::vector<std::string>& parts, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out += '/';
    out += parts[i];
  }
  return out;
}

}  // namespace

MlflowRunStatus mlflow_status(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return MlflowRunStatus::kScheduled;
    case JobState::kRunning:
      return MlflowRunStatus::kRunning;
    case JobState::kOk:
    case JobState::kStopped:  // as Ray Tune ends an early-stopped trial: terminated, not failed
      return MlflowRunStatus::kFinished;
    case JobState::kFailed:
    case JobState::kOutOfMemory:
      return MlflowRunStatus::kFailed;
    case JobState::kKilled:
    case JobState::kCancelled:
    case JobState::kInterrupted:
      return MlflowRunStatus::kKilled;
  }
  return MlflowRunStatus::kFailed;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const Decoded d = decode_utf8(text, i);
    if (d.length == 0) {
      out += kReplacement;
      ++i;
    } else {
      out += text.substr(i, d.length);
      i += d.length;
    }
  }
  return out;
}

std::string truncate_utf8(std::string_view text, size_t max_bytes) {
  std::string valid = valid_utf8(text);
  if (valid.size() <= max_bytes) return valid;
  size_t end = max_bytes;
  // Back up to the start of the character that would be cut.
  while (end > 0 && (static_cast<unsigned char>(valid[end]) & 0xC0) == 0x80) --end;
  valid.resize(end);
  return valid;
}

std::string yaml_scalar(std::string_view raw) {
  std::string text = valid_utf8(raw);
  if (plain_is_safe(text)) return text;
  for (size_t i = 0; i < text.size();) {
    const Decoded d = decode_utf8(text, i);
    if (needs_escape(d.code_point)) return double_quoted(text);
    i += d.length;
  }
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string mlflow_key(std::string_view name) {
  const std::string text = valid_utf8(name);
  std::string kept;
  for (size_t i = 0; i < text.size();) {
    const Decoded d = decode_utf8(text, i);
    const char c = static_cast<char>(d.code_point);
    const bool allowed = d.length == 1 && (is_ascii_letter(c) || is_ascii_digit(c) || c == '_' ||
                                           c == '-' || c == '.' || c == ' ' || c == '/');
    kept += allowed ? c : '_';
    i += d.length;
  }
  std::vector<std::string> segments;
  for (std::string& segment : split_path(kept)) {
    if (segment.empty()) continue;
    if (segment == ".") segment = "_";
    if (segment == "..") segment = "__";
    segments.push_back(std::move(segment));
  }
  std::string key = join_path(segments, segments.size());
  if (key.starts_with("..")) key[0] = '_';
  if (key.empty()) return "_";
  if (key.size() > kMlflowMaxKeyLength) {
    // Cut, then normalized again (a cut may leave a trailing '/' or a "."
    // segment); the second pass cannot grow it.
    return mlflow_key(std::string_view(key).substr(0, kMlflowMaxKeyLength));
  }
  return key;
}

std::string MlflowKeys::key(std::string_view name) {
  if (auto it = given_.find(name); it != given_.end()) return it->second;
  std::string key = unique_key(name);
  given_.emplace(std::string(name), key);
  return key;
}

std::string MlflowKeys::unique_key(std::string_view name) {
  std::vector<std::string> parts = split_path(mlflow_key(name));
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string base = parts[i];
    const bool last = i + 1 == parts.size();
    for (int n = 2;; ++n) {
      const std::string prefix = join_path(parts, i + 1);
      // A leading segment must not be another key's file; the whole key must
      // be neither a file nor a folder already.
      if (!files_.contains(prefix) && !(last && folders_.contains(prefix))) break;
      parts[i] = fmt::format("{}_{}", base, n);
    }
  }
  std::string key = join_path(parts, parts.size());
  files_.insert(key);
  for (size_t i = 1; i < parts.size(); ++i) folders_.insert(join_path(parts, i));
  return key;
}

std::string mlflow_metric_value(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string text = fmt::format("{}", value);
  // Python writes a float without a fraction or exponent with ".0".
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string mlflow_metric_line(UnixMillis time_ms, double value, int64_t step) {
  return fmt::format("{} {} {}\n", time_ms, mlflow_metric_value(value), step);
}

std::string file_uri(std::string_view absolute_path) {
  std::string out = "file://";
  for (char c : absolute_path) {
    if (is_ascii_letter(c) || is_ascii_digit(c) || c == '_' || c == '.' || c == '-' || c == '~' ||
        c == '/') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

std::string mlflow_experiment_id(std::string_view source) {
  constexpr uint64_t kLow = 100'000'000'000'000'000ULL;  // 18 digits
  constexpr uint64_t kSpan = 900'000'000'000'000'000ULL;
  return std::to_string(kLow + hash64(source, 0) % kSpan);
}

std::string mlflow_run_id(std::string_view source) {
  return fmt::format("{:016x}{:016x}", hash64(source, 1), hash64(source, 2));
}

std::string mlflow_experiment_meta(const MlflowExperimentMeta& meta) {
  return fmt::format(
      "artifact_location: {}\n"
      "creation_time: {}\n"
      "experiment_id: {}\n"
      "last_update_time: {}\n"
      "lifecycle_stage: active\n"
      "name: {}\n",
      yaml_scalar(meta.artifact_location), meta.creation_time_ms, yaml_scalar(meta.experiment_id),
      meta.last_update_time_ms, yaml_scalar(meta.name));
}

std::string mlflow_run_meta(const MlflowRunMeta& meta) {
  const auto time_or_null = [](const std::optional<UnixMillis>& t) {
    return t ? std::to_string(*t) : std::string("null");
  };
  const std::string run_id = yaml_scalar(meta.run_id);
  return fmt::format(
      "artifact_uri: {}\n"
      "end_time: {}\n"
      "entry_point_name: ''\n"
      "experiment_id: {}\n"
      "lifecycle_stage: active\n"
      "run_id: {}\n"
      "run_name: {}\n"
      "run_uuid: {}\n"
      "source_name: ''\n"
      "source_type: {}\n"
      "source_version: ''\n"
      "start_time: {}\n"
      "status: {}\n"
      "tags: []\n"
      "user_id: {}\n",
      yaml_scalar(meta.artifact_uri), time_or_null(meta.end_time_ms),
      yaml_scalar(meta.experiment_id), run_id, yaml_scalar(meta.run_name), run_id,
      kMlflowSourceLocal, meta.start_time_ms, static_cast<int>(meta.status),
      yaml_scalar(meta.user_id));
}

}  // namespace colo
