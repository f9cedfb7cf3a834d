// TOML job files: parsing, validation, defaults, sweep expansion.
//
// This is the only translation unit that includes toml++ (header-only and slow
// to compile); nothing toml++ leaks out of it.
#include "jobs/job_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/paths.h"
#include "common/units.h"

// Header-only, without exceptions: parse errors come back as values.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

namespace colo {
namespace {

constexpr int64_t kMaxExpandedJobs = 100'000;
constexpr size_t kMaxReportedErrors = 20;
constexpr const char* kNeedsAJob =
    "a job file needs at least one [[job]] with name and command; see docs/job-file.md";

constexpr std::array<const char*, 4> kTopLevelKeys = {"run", "defaults", "job", "data"};
constexpr std::array<const char*, 3> kRunKeys = {"max_per_gpu", "mechanism", "policy"};
constexpr std::array<const char*, 2> kPolicies = {"fixed", "auto"};
constexpr std::array<const char*, 4> kMechanisms = {"exclusive", "naive", "mps", "mig"};
// Keys that may appear in [defaults] and in every [[job]].
constexpr std::array<const char*, 14> kSettingKeys = {
    "workdir",     "env",         "gpu_memory", "sm_share",  "memory_limit",
    "epoch_regex", "sm_activity", "gpu_util",   "solo_time", "startup_time",
    "mig_profile", "mig_group",   "restart",    "dataset"};
// Keys of a [data.NAME] table (a dataset served by a shared loader).
constexpr std::array<const char*, 10> kDataKeys = {
    "path", "format", "size", "augment", "threads", "ring", "chunk", "lag_timeout", "cpus", "seed"};
// Keys only a [[job]] may have.
constexpr std::array<const char*, 4> kJobOnlyKeys = {"name", "command", "repeat", "grid"};

// Collects every validation error of a file, so that the user can fix them
// all in one go. Each message is prefixed with "file:line: ".
class Diagnostics {
 public:
  explicit Diagnostics(std::string path) : path_(std::move(path)) {}

  void add(int line, std::string_view message) {
    ++count_;
    if (messages_.size() >= kMaxReportedErrors) return;
    if (line > 0) {
      messages_.push_back(fmt::format("{}:{}: {}", path_, line, message));
    } else {
      messages_.push_back(fmt::format("{}: {}", path_, message));
    }
  }
  bool empty() const { return count_ == 0; }
  const std::string& path() const { return path_; }

  Error to_error() const {
    std::string text;
    for (const std::string& m : messages_) {
      if (!text.empty()) text += '\n';
      text += m;
    }
    if (count_ > messages_.size()) {
      text += fmt::format("\n... and {} more errors", count_ - messages_.size());
    }
    return Error(std::move(text));
  }

 private:
  std::string path_;
  std::vector<std::string> messages_;
  size_t count_ = 0;
};

int line_of(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

int line_of(const toml::key& key, const toml::node& value) {
  int line = static_cast<int>(key.source().begin.line);
  return line > 0 ? line : line_of(value);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t subst = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// " (did you mean 'command'?)" when one candidate is close enough, else "".
template <class Names>
std::string did_you_mean(std::string_view key, const Names& candidates) {
  size_t limit = key.size() <= 3 ? 1 : key.size() <= 6 ? 2 : (key.size() + 2) / 3;
  std::string best;
  size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    size_t d = edit_distance(key, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}

std::string describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return fmt::format("a string \"{}\"", node.value<std::string>().value_or(""));
    case toml::node_type::integer:
      return fmt::format("an integer {}", node.value<int64_t>().value_or(0));
    case toml::node_type::floating_point:
      return fmt::format("a float {}", node.value<double>().value_or(0));
    case toml::node_type::boolean:
      return fmt::format("a boolean {}", node.value<bool>().value_or(false));
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

bool is_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

bool is_param_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool is_env_name(std::string_view s) {
  return is_param_name(s) && !std::isdigit(static_cast<unsigned char>(s.front()));
}

// Shortest text that reads back as the same double, always with a decimal
// point or exponent ("0.1", "1.0", "1e+20"), as Python prints floats.
std::string format_float(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

// A value with the source line it came from, for messages about it later.
template <class T>
struct Sourced {
  T value;
  int line = 0;
};

// The keys [defaults] and [[job]] share. Unset fields are absent.
struct Settings {
  std::optional<Sourced<std::string>> workdir;
  std::map<std::string, Sourced<std::string>> env;
  std::optional<uint64_t> gpu_memory_bytes;
  std::optional<int> sm_share_pct;
  std::optional<uint64_t> memory_limit_bytes;
  std::optional<std::string> epoch_regex;
  std::optional<int> sm_activity_pct;
  std::optional<int> gpu_util_pct;
  std::optional<int64_t> solo_time_ms;
  std::optional<int64_t> startup_time_ms;
  std::optional<std::string> mig_profile;
  std::optional<std::string> mig_group;
  std::optional<RestartPolicy> restart;
  std::optional<Sourced<std::string>> dataset;

  // `over` wins where it sets a field; env is merged key by key.
  static Settings merge(const Settings& base, const Settings& over) {
    Settings out = base;
    if (over.workdir) out.workdir = over.workdir;
    for (const auto& [k, v] : over.env) out.env[k] = v;
    if (over.gpu_memory_bytes) out.gpu_memory_bytes = over.gpu_memory_bytes;
    if (over.sm_share_pct) out.sm_share_pct = over.sm_share_pct;
    if (over.memory_limit_bytes) out.memory_limit_bytes = over.memory_limit_bytes;
    if (over.epoch_regex) out.epoch_regex = over.epoch_regex;
    if (over.sm_activity_pct) out.sm_activity_pct = over.sm_activity_pct;
    if (over.gpu_util_pct) out.gpu_util_pct = over.gpu_util_pct;
    if (over.solo_time_ms) out.solo_time_ms = over.solo_time_ms;
    if (over.startup_time_ms) out.startup_time_ms = over.startup_time_ms;
    if (over.mig_profile) out.mig_profile = over.mig_profile;
    if (over.mig_group) out.mig_group = over.mig_group;
    if (over.restart) out.restart = over.restart;
    if (over.dataset) out.dataset = over.dataset;
    return out;
  }
};

// One [[job]] block before expansion.
struct JobBlock {
  std::string name;
  int line = 0;
  Sourced<std::vector<std::string>> command;
  int64_t repeat = 1;
  // Grid parameters in key order (sorted), each with its values as text.
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;
  Settings settings;  // defaults already merged in
};

// Reads the typed values of one table and reports what is wrong with them.
// `where` prefixes messages: "job 'a': ", "[defaults]: ", ...
class TableReader {
 public:
  TableReader(Diagnostics& diag, std::string where) : diag_(diag), where_(std::move(where)) {}

  void error(int line, std::string_view message) {
    diag_.add(line, fmt::format("{}{}", where_, message));
  }

  std::optional<std::string> string(std::string_view key, const toml::node& node,
                                    std::string_view expected = "a string") {
    const auto* s = node.as_string();
    if (s == nullptr) {
      error(line_of(node),
            fmt::format("key '{}' must be {}, got {}", key, expected, describe(node)));
      return std::nullopt;
    }
    if (s->get().find('\0') != std::string::npos) {
      error(line_of(node), fmt::format("key '{}' must not contain a NUL character", key));
      return std::nullopt;
    }
    return s->get();
  }

  std::optional<int64_t> int_in_range(std::string_view key, const toml::node& node, int64_t lo,
                                      int64_t hi, std::string_view expected) {
    const auto* i = node.as_integer();
    if (i == nullptr || i->get() < lo || i->get() > hi) {
      error(line_of(node),
            fmt::format("key '{}' must be {}, got {}", key, expected, describe(node)));
      return std::nullopt;
    }
    return i->get();
  }

  // A size: "4GiB" or a positive integer number of bytes.
  std::optional<uint64_t> size(std::string_view key, const toml::node& node) {
    constexpr std::string_view kExpected =
        "a size such as \"4GiB\" or \"512MiB\", or a positive number of bytes";
    if (const auto* i = node.as_integer(); i != nullptr && i->get() > 0) {
      return static_cast<uint64_t>(i->get());
    }
    if (const auto* s = node.as_string(); s != nullptr) {
      Result<uint64_t> bytes = parse_bytes(s->get());
      if (bytes.ok() && *bytes > 0) return *bytes;
      error(line_of(node), fmt::format("key '{}' must be {}: {}", key, kExpected,
                                       bytes.ok() ? "got zero" : bytes.error().message()));
      return std::nullopt;
    }
    error(line_of(node),
          fmt::format("key '{}' must be {}, got {}", key, kExpected, describe(node)));
    return std::nullopt;
  }

  // Reads one of kSettingKeys into `settings`.
  void setting(const toml::key& key, const toml::node& node, Settings& settings) {
    const std::string_view k = key.str();
    if (k == "workdir") {
      if (auto s = string(k, node, "a directory path (a string)")) {
        settings.workdir = Sourced<std::string>{*s, line_of(node)};
      }
    } else if (k == "env") {
      const auto* table = node.as_table();
      if (table == nullptr) {
        error(line_of(node), fmt::format("key 'env' must be a table of strings such as "
                                         "{{ CUDA_LAUNCH_BLOCKING = \"1\" }}, got {}",
                                         describe(node)));
        return;
      }
      for (const auto& [name, value] : *table) {
        if (!is_env_name(name.str())) {
          error(line_of(name, value),
                fmt::format("env: '{}' is not a valid environment variable name "
                            "(letters, digits and '_', not starting with a digit)",
                            name.str()));
          continue;
        }
        std::optional<std::string> text;
        if (value.is_string()) {
          text = string(fmt::format("env.{}", name.str()), value);
        } else if (const auto* i = value.as_integer()) {
          text = std::to_string(i->get());
        } else if (const auto* f = value.as_floating_point()) {
          text = format_float(f->get());
        } else if (const auto* b = value.as_boolean()) {
          text = b->get() ? "true" : "false";
        } else {
          error(line_of(value),
                fmt::format("key 'env.{}' must be a string, got {}", name.str(), describe(value)));
        }
        if (text) settings.env[std::string(name.str())] = {*text, line_of(value)};
      }
    } else if (k == "gpu_memory") {
      if (auto bytes = size(k, node)) settings.gpu_memory_bytes = bytes;
    } else if (k == "memory_limit") {
      if (auto bytes = size(k, node)) settings.memory_limit_bytes = bytes;
    } else if (k == "sm_share") {
      if (auto pct = int_in_range(k, node, 1, 100, "a percentage from 1 to 100")) {
        settings.sm_share_pct = static_cast<int>(*pct);
      }
    } else if (k == "sm_activity" || k == "gpu_util") {
      if (auto pct = int_in_range(k, node, 1, 100, "a percentage from 1 to 100")) {
        (k == "sm_activity" ? settings.sm_activity_pct : settings.gpu_util_pct) =
            static_cast<int>(*pct);
      }
    } else if (k == "solo_time" || k == "startup_time") {
      auto text = string(k, node, "a duration such as \"12m\" or \"1h30m\"");
      if (!text) return;
      Result<int64_t> ms = parse_duration_ms(*text);
      if (ms.ok() && *ms > 0) {
        (k == "solo_time" ? settings.solo_time_ms : settings.startup_time_ms) = *ms;
      } else {
        error(line_of(node), fmt::format("key '{}' must be a duration such as \"12m\": {}", k,
                                         ms.ok() ? "got zero" : ms.error().message()));
      }
    } else if (k == "mig_profile" || k == "mig_group") {
      auto text = string(k, node, "a string");
      if (text && text->empty()) {
        error(line_of(node), fmt::format("key '{}' must not be empty", k));
      } else if (text) {
        (k == "mig_profile" ? settings.mig_profile : settings.mig_group) = *text;
      }
    } else if (k == "dataset") {
      auto name = string(k, node, "the name of a [data.NAME] table");
      if (name && !is_name(*name)) {
        error(line_of(node), fmt::format("key 'dataset' must be a name (letters, digits, '_', "
                                         "'.', '-') of a [data.NAME] table, got \"{}\"",
                                         *name));
      } else if (name) {
        settings.dataset = Sourced<std::string>{*name, line_of(node)};
      }
    } else if (k == "restart") {
      auto text = string(k, node, "\"on-failure\" or \"never\"");
      if (text && *text == "on-failure") {
        settings.restart = RestartPolicy::kOnFailure;
      } else if (text && *text == "never") {
        settings.restart = RestartPolicy::kNever;
      } else if (text) {
        error(line_of(node),
              fmt::format("key 'restart' must be \"on-failure\" or \"never\", got \"{}\"", *text));
      }
    } else if (k == "epoch_regex") {
      auto re = string(k, node, "a regular expression (a string)");
      if (!re) return;
      try {
        std::regex compiled(*re);
        settings.epoch_regex = *re;
      } catch (const std::regex_error& e) {
        error(line_of(node),
              fmt::format("key 'epoch_regex' is not a valid regular expression: {}", e.what()));
      }
    }
  }

 private:
  Diagnostics& diag_;
  std::string where_;
};

template <class Names>
bool contains(const Names& names, std::string_view key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

// Placeholders: "{name}" (name of letters, digits and '_') stands for a grid
// value; "{{name}}" is the literal text "{name}"; every other brace is
// literal, so JSON or awk programs in a command need no escaping.
struct TextPiece {
  std::string text;  // literal text, or the placeholder's name
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

// Checks the placeholders of `text` against `params`. Returns an error
// message, or nothing when every placeholder is known.
std::optional<std::string> check_placeholders(std::string_view text,
                                              const std::set<std::string>& params) {
  for (const TextPiece& piece : split_placeholders(text)) {
    if (!piece.placeholder || params.count(piece.text) > 0) continue;
    std::string known;
    for (const std::string& p : params) known += (known.empty() ? "" : ", ") + p;
    return fmt::format(
        "unknown placeholder '{{{}}}'{} ({}; write '{{{{{}}}}}' for the literal text)", piece.text,
        did_you_mean(piece.text, params),
        params.empty() ? "this job has no grid" : fmt::format("grid parameters: {}", known),
        piece.text);
  }
  return std::nullopt;
}

// Replaces each placeholder by its value. The text has passed
// check_placeholders.
std::string substitute(std::string_view text, const std::map<std::string, std::string>& values) {
  std::string out;
  for (const TextPiece& piece : split_placeholders(text)) {
    out += piece.placeholder ? values.at(piece.text) : piece.text;
  }
  return out;
}

std::optional<std::string> grid_value_text(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) return format_float(f->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  return std::nullopt;
}

void read_run(const toml::node& node, Diagnostics& diag, JobFile& out) {
  TableReader reader(diag, "[run]: ");
  const auto* table = node.as_table();
  if (table == nullptr) {
    reader.error(line_of(node), fmt::format("must be a table, got {}", describe(node)));
    return;
  }
  for (const auto& [key, value] : *table) {
    if (key.str() == "max_per_gpu") {
      if (auto n = reader.int_in_range(key.str(), value, 1, std::numeric_limits<int>::max(),
                                       "a positive integer")) {
        out.max_jobs_per_gpu = static_cast<int>(*n);
      }
    } else if (key.str() == "mechanism") {
      auto name =
          reader.string(key.str(), value, "one of \"exclusive\", \"naive\", \"mps\", \"mig\"");
      if (!name) continue;
      if (!contains(kMechanisms, *name)) {
        reader.error(line_of(value),
                     fmt::format("key 'mechanism' must be one of \"exclusive\", \"naive\", "
                                 "\"mps\", \"mig\", got \"{}\"{}",
                                 *name, did_you_mean(*name, kMechanisms)));
        continue;
      }
      out.mechanism = *name;
    } else if (key.str() == "policy") {
      auto name = reader.string(key.str(), value, "\"fixed\" or \"auto\"");
      if (!name) continue;
      if (!contains(kPolicies, *name)) {
        reader.error(line_of(value),
                     fmt::format("key 'policy' must be \"fixed\" or \"auto\", got \"{}\"{}", *name,
                                 did_you_mean(*name, kPolicies)));
        continue;
      }
      out.policy = *name;
    } else {
      reader.error(line_of(key, value),
                   fmt::format("unknown key '{}'{}; [run] takes max_per_gpu, mechanism and policy",
                               key.str(), did_you_mean(key.str(), kRunKeys)));
    }
  }
}

Settings read_defaults(const toml::node& node, Diagnostics& diag) {
  Settings settings;
  TableReader reader(diag, "[defaults]: ");
  const auto* table = node.as_table();
  if (table == nullptr) {
    reader.error(line_of(node), fmt::format("must be a table, got {}", describe(node)));
    return settings;
  }
  for (const auto& [key, value] : *table) {
    if (contains(kSettingKeys, key.str())) {
      reader.setting(key, value, settings);
    } else if (contains(kJobOnlyKeys, key.str())) {
      reader.error(
          line_of(key, value),
          fmt::format("key '{}' cannot have a default; set it in each [[job]]", key.str()));
    } else {
      reader.error(line_of(key, value), fmt::format("unknown key '{}'{}", key.str(),
                                                    did_you_mean(key.str(), kSettingKeys)));
    }
  }
  return settings;
}

// Reads one [[job]] table. Returns nothing when it has errors (reported).
std::optional<JobBlock> read_job(const toml::table& table, int index, const Settings& defaults,
                                 Diagnostics& diag) {
  JobBlock block;
  block.line = line_of(table);
  bool ok = true;

  std::string where = fmt::format("job #{}: ", index);
  const toml::node* name_node = table.get("name");
  if (name_node == nullptr) {
    diag.add(block.line, fmt::format("{}missing key 'name' (a string of letters, digits, "
                                     "'_', '.', '-')",
                                     where));
    ok = false;
  } else if (const auto* s = name_node->as_string(); s == nullptr || !is_name(s->get())) {
    diag.add(line_of(*name_node),
             fmt::format("{}key 'name' must be a string of letters, digits, '_', '.' and '-', "
                         "got {}",
                         where, describe(*name_node)));
    ok = false;
  } else {
    block.name = s->get();
    where = fmt::format("job '{}': ", block.name);
  }

  TableReader reader(diag, where);
  Settings own;
  bool have_command = false;
  for (const auto& [key, value] : table) {
    const std::string_view k = key.str();
    if (k == "name") continue;
    if (k == "command") {
      have_command = true;
      const auto* array = value.as_array();
      if (array == nullptr || array->empty()) {
        reader.error(
            line_of(value),
            fmt::format("key 'command' must be a non-empty array of strings such as "
                        "[\"python3\", \"train.py\"], got {}{}",
                        array ? "an empty array" : describe(value),
                        value.is_string() ? " (split it into an array of arguments)" : ""));
        ok = false;
        continue;
      }
      block.command.line = line_of(value);
      for (size_t i = 0; i < array->size(); ++i) {
        const toml::node& arg = *array->get(i);
        if (!arg.is_string()) {
          reader.error(
              line_of(arg),
              fmt::format("command[{}] must be a string, got {}{}", i, describe(arg),
                          arg.is_number() || arg.is_boolean() ? " (put it in quotes)" : ""));
          ok = false;
        } else if (auto s = reader.string(fmt::format("command[{}]", i), arg)) {
          block.command.value.push_back(*s);
        } else {
          ok = false;
        }
      }
      if (!block.command.value.empty() && block.command.value.front().empty()) {
        reader.error(block.command.line, "command[0] (the program) must not be empty");
        ok = false;
      }
    } else if (k == "repeat") {
      if (auto n = reader.int_in_range(k, value, 1, kMaxExpandedJobs, "a positive integer")) {
        block.repeat = *n;
      } else {
        ok = false;
      }
    } else if (k == "grid") {
      const auto* grid = value.as_table();
      if (grid == nullptr) {
        reader.error(line_of(value), fmt::format("key 'grid' must be a table of arrays such as "
                                                 "{{ lr = [0.1, 0.01] }}, got {}",
                                                 describe(value)));
        ok = false;
        continue;
      }
      for (const auto& [param, values] : *grid) {
        if (!is_param_name(param.str())) {
          reader.error(line_of(param, values),
                       fmt::format("grid parameter '{}' must be named with letters, digits "
                                   "and '_' only",
                                   param.str()));
          ok = false;
          continue;
        }
        const auto* array = values.as_array();
        if (array == nullptr || array->empty()) {
          reader.error(line_of(values),
                       fmt::format("grid.{} must be a non-empty array of strings, integers, "
                                   "floats or booleans, got {}",
                                   param.str(), array ? "an empty array" : describe(values)));
          ok = false;
          continue;
        }
        std::vector<std::string> texts;
        for (const toml::node& v : *array) {
          auto text = grid_value_text(v);
          if (!text) {
            reader.error(line_of(v),
                         fmt::format("grid.{} values must be strings, integers, floats or "
                                     "booleans, got {}",
                                     param.str(), describe(v)));
            ok = false;
            continue;
          }
          texts.push_back(std::move(*text));
        }
        block.grid.emplace_back(std::string(param.str()), std::move(texts));
      }
    } else if (contains(kSettingKeys, k)) {
      reader.setting(key, value, own);
    } else {
      std::vector<std::string_view> all(kJobOnlyKeys.begin(), kJobOnlyKeys.end());
      all.insert(all.end(), kSettingKeys.begin(), kSettingKeys.end());
      std::string hint = did_you_mean(k, all);
      if (hint.empty() && contains(kRunKeys, k)) hint = fmt::format(" ('{}' belongs in [run])", k);
      reader.error(line_of(key, value), fmt::format("unknown key '{}'{}", k, hint));
      ok = false;
    }
  }
  if (!have_command) {
    reader.error(block.line,
                 "missing key 'command' (an array such as [\"python3\", \"train.py\"])");
    ok = false;
  }
  block.settings = Settings::merge(defaults, own);
  if (!ok) return std::nullopt;

  // Every placeholder must name a grid parameter.
  std::set<std::string> params;
  for (const auto& [param, values] : block.grid) params.insert(param);
  auto check = [&](std::string_view text, int line, std::string_view field) {
    if (auto problem = check_placeholders(text, params)) {
      reader.error(line, fmt::format("{}: {}", field, *problem));
      ok = false;
    }
  };
  for (const std::string& arg : block.command.value) check(arg, block.command.line, "command");
  if (block.settings.workdir) {
    check(block.settings.workdir->value, block.settings.workdir->line, "workdir");
  }
  for (const auto& [name, value] : block.settings.env) {
    check(value.value, value.line, fmt::format("env.{}", name));
  }
  if (!ok) return std::nullopt;
  return block;
}

std::string normal_dir(const std::string& path, const std::string& base_dir) {
  std::string out = std::filesystem::path(absolute_path(path, base_dir)).lexically_normal();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// Appends the block's instances to `jobs`: the cartesian product of the grid
// (first parameter varying slowest), each repeated `repeat` times.
void expand(const JobBlock& block, const std::string& path, const std::string& base_dir,
            std::vector<JobSpec>& jobs) {
  std::vector<size_t> index(block.grid.size(), 0);
  while (true) {
    std::map<std::string, std::string> params;
    std::string suffix;
    for (size_t p = 0; p < block.grid.size(); ++p) {
      const auto& [name, values] = block.grid[p];
      params[name] = values[index[p]];
      suffix += fmt::format("{}{}={}", suffix.empty() ? "[" : ",", name, values[index[p]]);
    }
    if (!suffix.empty()) suffix += "]";

    JobSpec base;
    base.group = block.name;
    for (const std::string& arg : block.command.value)
      base.command.push_back(substitute(arg, params));
    base.working_dir = block.settings.workdir
                           ? normal_dir(substitute(block.settings.workdir->value, params), base_dir)
                           : base_dir;
    for (const auto& [name, value] : block.settings.env) {
      base.env[name] = substitute(value.value, params);
    }
    base.gpu_memory_bytes = block.settings.gpu_memory_bytes;
    base.sm_share_pct = block.settings.sm_share_pct;
    base.memory_limit_bytes = block.settings.memory_limit_bytes;
    base.epoch_regex = block.settings.epoch_regex;
    base.sm_activity_pct = block.settings.sm_activity_pct;
    base.gpu_util_pct = block.settings.gpu_util_pct;
    base.solo_time_ms = block.settings.solo_time_ms;
    base.startup_time_ms = block.settings.startup_time_ms;
    base.mig_profile = block.settings.mig_profile;
    base.mig_group = block.settings.mig_group;
    base.restart = block.settings.restart.value_or(RestartPolicy::kOnFailure);
    if (block.settings.dataset) base.dataset = block.settings.dataset->value;
    base.params = params;
    base.source = fmt::format("{}:{}", path, block.line);
    for (int64_t r = 1; r <= block.repeat; ++r) {
      JobSpec spec = base;
      spec.name = block.name + suffix + (block.repeat > 1 ? fmt::format("#{}", r) : "");
      spec.repeat_index = static_cast<int>(r);
      jobs.push_back(std::move(spec));
    }

    // Odometer step; the last parameter varies fastest.
    size_t p = block.grid.size();
    while (p > 0) {
      --p;
      if (++index[p] < block.grid[p].second.size()) break;
      index[p] = 0;
      if (p == 0) return;
    }
    if (block.grid.empty()) return;
  }
}

// Reads the [data.NAME] tables.
void read_data(const toml::node& node, const std::string& path, const std::string& base_dir,
               Diagnostics& diag, JobFile& out) {
  const auto* tables = node.as_table();
  if (tables == nullptr) {
    diag.add(line_of(node), fmt::format("'data' must hold tables such as [data.imagenet] with a "
                                        "path, got {}",
                                        describe(node)));
    return;
  }
  for (const auto& [name_key, value] : *tables) {
    const std::string name(name_key.str());
    TableReader reader(diag, fmt::format("[data.{}]: ", name));
    const auto* table = value.as_table();
    if (table == nullptr || !is_name(name)) {
      reader.error(line_of(name_key, value),
                   table == nullptr ? fmt::format("must be a table (write [data.{}] with a path "
                                                  "= ...), got {}",
                                                  name, describe(value))
                                    : "the name must be letters, digits, '_', '.' or '-'");
      continue;
    }
    DataSourceSpec spec;
    spec.name = name;
    spec.source = fmt::format("{}:{}", path, line_of(*table));
    for (const auto& [key, v] : *table) {
      const std::string_view k = key.str();
      if (k == "path") {
        if (auto p = reader.string(k, v, "the dataset's path (a string)"))
          spec.path = absolute_path(*p, base_dir);
      } else if (k == "format") {
        auto f = reader.string(k, v, "\"imagefolder\", \"cifar10\" or \"packed\"");
        if (f && *f != "imagefolder" && *f != "cifar10" && *f != "packed") {
          reader.error(line_of(v), fmt::format("key 'format' must be \"imagefolder\", "
                                               "\"cifar10\" or \"packed\", got \"{}\"",
                                               *f));
        } else if (f) {
          spec.format = *f;
        }
      } else if (k == "size") {
        if (auto n = reader.int_in_range(k, v, 1, 4096, "a crop size in pixels from 1 to 4096"))
          spec.image_size = static_cast<int>(*n);
      } else if (k == "threads") {
        if (auto n = reader.int_in_range(k, v, 1, 1024, "a number of threads from 1 to 1024"))
          spec.threads = static_cast<int>(*n);
      } else if (k == "chunk") {
        if (auto n = reader.int_in_range(k, v, 1, 4096, "samples per ring slot, 1 to 4096"))
          spec.chunk = static_cast<int>(*n);
      } else if (k == "seed") {
        if (auto n = reader.int_in_range(k, v, 0, INT64_MAX, "a non-negative integer"))
          spec.seed = *n;
      } else if (k == "augment") {
        if (const auto* b = v.as_boolean()) {
          spec.augment = b->get();
        } else {
          reader.error(line_of(v),
                       fmt::format("key 'augment' must be true or false, got {}", describe(v)));
        }
      } else if (k == "ring") {
        if (auto bytes = reader.size(k, v)) spec.ring_bytes = bytes;
      } else if (k == "lag_timeout") {
        auto text = reader.string(k, v, "a duration such as \"30s\"");
        if (!text) continue;
        Result<int64_t> ms = parse_duration_ms(*text);
        if (ms.ok() && *ms > 0) {
          spec.lag_timeout_ms = *ms;
        } else {
          reader.error(line_of(v), fmt::format("key 'lag_timeout' must be a duration such as "
                                               "\"30s\": {}",
                                               ms.ok() ? "got zero" : ms.error().message()));
        }
      } else if (k == "cpus") {
        auto text = reader.string(k, v, "a CPU list such as \"0-3\"");
        if (text &&
            (text->empty() || text->find_first_not_of("0123456789,-") != std::string::npos)) {
          reader.error(line_of(v), fmt::format("key 'cpus' must be a CPU list such as \"0-3\" "
                                               "or \"0,2,4-7\", got \"{}\"",
                                               *text));
        } else if (text) {
          spec.cpus = *text;
        }
      } else {
        reader.error(line_of(key, v),
                     fmt::format("unknown key '{}'{}", k, did_you_mean(k, kDataKeys)));
      }
    }
    if (spec.path.empty()) {
      reader.error(line_of(*table), "needs a path: the dataset's directory or file");
      continue;
    }
    out.data_sources[name] = std::move(spec);
  }
}

bool blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

}  // namespace

Result<JobFile> parse_job_file(std::string_view text, const std::string& path,
                               const std::string& base_dir) {
  if (blank(text)) return Error(fmt::format("{} is empty: {}", path, kNeedsAJob));

  toml::parse_result parsed = toml::parse(text, std::string_view(path));
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return Error(fmt::format("{}:{}:{}: TOML syntax error: {}", path, e.source().begin.line,
                             e.source().begin.column, e.description()));
  }
  const toml::table& root = parsed.table();
  if (root.empty()) return Error(fmt::format("{} has no settings: {}", path, kNeedsAJob));

  const std::string abs_base = normal_dir(base_dir.empty() ? "." : base_dir, "");
  Diagnostics diag(path);
  JobFile out;
  out.path = path;
  Settings defaults;
  if (const toml::node* run = root.get("run")) read_run(*run, diag, out);
  if (const toml::node* d = root.get("defaults")) defaults = read_defaults(*d, diag);
  if (const toml::node* d = root.get("data")) read_data(*d, path, abs_base, diag, out);

  for (const auto& [key, value] : root) {
    if (contains(kTopLevelKeys, key.str())) continue;
    std::string hint = did_you_mean(key.str(), kTopLevelKeys);
    if (hint.empty() && (contains(kSettingKeys, key.str()) || contains(kJobOnlyKeys, key.str()))) {
      hint = fmt::format(" ('{}' belongs in a [[job]] or in [defaults])", key.str());
    }
    diag.add(line_of(key, value),
             fmt::format("unknown top-level key '{}'{}; a job file has [run], [defaults], "
                         "[data.NAME] and [[job]] sections",
                         key.str(), hint));
  }

  std::vector<JobBlock> blocks;
  const toml::node* job_node = root.get("job");
  if (job_node == nullptr) {
    diag.add(0, fmt::format("no [[job]] entries: {}", kNeedsAJob));
  } else if (const auto* jobs = job_node->as_array(); jobs == nullptr) {
    diag.add(line_of(*job_node), job_node->is_table()
                                     ? "'job' must be an array of tables: write [[job]], not [job]"
                                     : fmt::format("'job' must be an array of tables ([[job]] "
                                                   "sections), got {}",
                                                   describe(*job_node)));
  } else if (jobs->empty()) {
    diag.add(line_of(*job_node), fmt::format("'job' is empty: {}", kNeedsAJob));
  } else {
    for (size_t i = 0; i < jobs->size(); ++i) {
      const toml::node& node = *jobs->get(i);
      const auto* table = node.as_table();
      if (table == nullptr) {
        diag.add(line_of(node), fmt::format("job #{} must be a table ([[job]] section), got {}",
                                            i + 1, describe(node)));
        continue;
      }
      if (auto block = read_job(*table, static_cast<int>(i + 1), defaults, diag)) {
        blocks.push_back(std::move(*block));
      }
    }
  }
  if (!diag.empty()) return diag.to_error();

  int64_t total = 0;
  for (const JobBlock& block : blocks) {
    int64_t count = block.repeat;
    for (const auto& [param, values] : block.grid) {
      count *= static_cast<int64_t>(values.size());
      if (count > kMaxExpandedJobs) break;
    }
    total += count;
    if (total > kMaxExpandedJobs) {
      diag.add(block.line,
               fmt::format("job '{}': the file expands to more than {} jobs; shrink the grid or "
                           "repeat, or split the file",
                           block.name, kMaxExpandedJobs));
      return diag.to_error();
    }
  }

  std::vector<std::string> dataset_names;
  for (const auto& [name, spec] : out.data_sources) dataset_names.push_back(name);
  for (const JobBlock& block : blocks) {
    const auto& dataset = block.settings.dataset;
    if (dataset && out.data_sources.count(dataset->value) == 0) {
      diag.add(dataset->line,
               fmt::format("job '{}': dataset '{}' has no [data.{}] table{}; add one with the "
                           "dataset's path",
                           block.name, dataset->value, dataset->value,
                           did_you_mean(dataset->value, dataset_names)));
    }
  }
  if (!diag.empty()) return diag.to_error();

  std::unordered_map<std::string, std::string> seen;  // name -> source
  for (const JobBlock& block : blocks) {
    size_t first = out.jobs.size();
    expand(block, path, abs_base, out.jobs);
    for (size_t i = first; i < out.jobs.size(); ++i) {
      auto [it, inserted] = seen.emplace(out.jobs[i].name, out.jobs[i].source);
      if (!inserted) {
        diag.add(block.line,
                 fmt::format("job name '{}' is used more than once (also at {}); names must be "
                             "unique after grid and repeat expansion",
                             out.jobs[i].name, it->second));
      }
    }
  }
  if (!diag.empty()) return diag.to_error();
  return out;
}

Result<JobFile> load_job_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error(fmt::format("cannot read job file {}: {}", path, std::strerror(errno)));
  }
  std::string text;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Error(fmt::format("cannot read job file {}: it is a directory", path));
  }
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return Error(fmt::format("cannot read job file {}: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  std::string dir = std::filesystem::path(absolute_path(path)).parent_path();
  return parse_job_file(text, path, dir);
}

}  // namespace colo
