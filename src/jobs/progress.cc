#include "jobs/progress.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace colo {
namespace {

// A line longer than this without a newline is handed out as it is, so that a
// job that never writes '\n' cannot make colo buffer without bound.
constexpr size_t kMaxLineBytes = 1 << 20;
// The epoch regex sees at most this much of each log line (std::regex
// recurses per character and would overflow the stack on huge lines).
constexpr size_t kMaxRegexLineBytes = 4096;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_blank(std::string_view s) { return trim(s).empty(); }

// Reads an optional integer field; null counts as absent.
Status read_int(const nlohmann::json& object, const char* key, std::optional<int64_t>& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return OkStatus();
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Error(fmt::format("\"{}\" is out of range: {}", key, it->dump()));
  }
  if (it->is_number_integer()) {
    out = it->get<int64_t>();
    return OkStatus();
  }
  return Error(fmt::format("\"{}\" must be an integer, got {}", key, it->dump()));
}

bool is_known_key(const std::string& key) {
  return key == "event" || key == "epoch" || key == "step" || key == "samples" || key == "time" ||
         key == "metrics";
}

}  // namespace

Result<ProgressEvent> parse_progress_line(std::string_view line, UnixMillis read_time_ms) {
  std::string_view text = trim(line);
  if (text.empty()) return Error("empty line");
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Error("not valid JSON");
  if (!json.is_object()) return Error("not a JSON object");

  ProgressEvent event;
  auto kind = json.find("event");
  if (kind == json.end()) return Error("missing \"event\"");
  if (!kind->is_string())
    return Error(fmt::format("\"event\" must be a string, got {}", kind->dump()));
  event.kind = kind->get<std::string>();
  if (event.kind.empty()) return Error("\"event\" must not be empty");

  if (Status s = read_int(json, "epoch", event.epoch); !s.ok()) return s.error();
  if (Status s = read_int(json, "step", event.step); !s.ok()) return s.error();
  if (Status s = read_int(json, "samples", event.samples); !s.ok()) return s.error();

  event.time_ms = read_time_ms;
  if (auto t = json.find("time"); t != json.end() && !t->is_null()) {
    if (!t->is_number()) return Error(fmt::format("\"time\" must be a number, got {}", t->dump()));
    double seconds = t->get<double>();
    if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e13) {
      return Error(fmt::format("\"time\" is not a plausible Unix time in seconds: {}", t->dump()));
    }
    event.time_ms = static_cast<UnixMillis>(std::llround(seconds * 1000.0));
  }

  if (auto m = json.find("metrics"); m != json.end() && !m->is_null()) {
    if (!m->is_object()) {
      return Error(fmt::format("\"metrics\" must be an object, got {}", m->dump()));
    }
    for (const auto& [name, value] : m->items()) {
      if (value.is_number()) event.metrics[name] = value.get<double>();
    }
  }
  for (const auto& [name, value] : json.items()) {
    if (!is_known_key(name) && value.is_number()) event.metrics[name] = value.get<double>();
  }
  return event;
}

std::vector<std::string> LineFollower::read_new_lines() {
  std::vector<std::string> lines;
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return lines;  // not written yet (or unreadable: nothing to report)
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    return lines;
  }
  const auto inode = static_cast<uint64_t>(st.st_ino);
  if (static_cast<uint64_t>(st.st_size) < offset_ || (inode_ != 0 && inode != inode_)) {
    // Truncated or replaced: start over.
    offset_ = 0;
    partial_.clear();
  }
  inode_ = inode;

  char buf[65536];
  while (true) {
    ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(offset_));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset_ += static_cast<uint64_t>(n);
    std::string_view chunk(buf, static_cast<size_t>(n));
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      if (nl == std::string_view::npos) {
        partial_.append(chunk);
        if (partial_.size() >= kMaxLineBytes) {
          lines.push_back(std::move(partial_));
          partial_.clear();
        }
        break;
      }
      partial_.append(chunk.substr(0, nl));
      if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
      lines.push_back(std::move(partial_));
      partial_.clear();
      chunk.remove_prefix(nl + 1);
    }
  }
  ::close(fd);
  return lines;
}

Result<ProgressReader> ProgressReader::create(const std::string& progress_path,
                                              const std::string& log_path,
                                              const std::optional<std::string>& epoch_regex) {
  std::optional<std::regex> re;
  if (epoch_regex) {
    try {
      re.emplace(*epoch_regex);
    } catch (const std::regex_error& e) {
      return Error(fmt::format("invalid epoch_regex '{}': {}", *epoch_regex, e.what()));
    }
  }
  return ProgressReader(progress_path, log_path, std::move(re));
}

ProgressReader::ProgressReader(std::string progress_path, std::string log_path,
                               std::optional<std::regex> re)
    : progress_(std::move(progress_path)), log_(std::move(log_path)), epoch_regex_(std::move(re)) {}

std::vector<ProgressEvent> ProgressReader::poll(UnixMillis now_ms) {
  std::vector<ProgressEvent> events;
  if (!progress_.path().empty()) {
    for (const std::string& line : progress_.read_new_lines()) {
      if (is_blank(line)) continue;
      Result<ProgressEvent> event = parse_progress_line(line, now_ms);
      if (event.ok()) {
        events.push_back(std::move(*event));
      } else {
        ++malformed_;
      }
    }
  }
  if (epoch_regex_ && !log_.path().empty()) {
    for (const std::string& line : log_.read_new_lines()) {
      std::string_view view(line);
      if (view.size() > kMaxRegexLineBytes) view = view.substr(0, kMaxRegexLineBytes);
      std::match_results<std::string_view::const_iterator> match;
      if (!std::regex_search(view.begin(), view.end(), match, *epoch_regex_)) continue;
      int64_t epoch = regex_epochs_ + 1;
      if (match.size() > 1 && match[1].matched && match[1].length() > 0) {
        std::string_view group(&*match[1].first, static_cast<size_t>(match[1].length()));
        int64_t parsed = 0;
        auto [end, ec] = std::from_chars(group.data(), group.data() + group.size(), parsed);
        if (ec == std::errc() && end == group.data() + group.size()) epoch = parsed;
      }
      regex_epochs_ = epoch;
      ProgressEvent event;
      event.time_ms = now_ms;
      event.kind = "epoch_end";
      event.epoch = epoch;
      events.push_back(std::move(event));
    }
  }
  return events;
}

}  // namespace colo
