#include "jobs/log_reason.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

#include "common/text.h"

namespace colo {
namespace {

// The last two: NCCL's own check of a CUDA call (a rank of a gang that ran
// out of memory under its MPS limit says only "unhandled cuda error" in
// PyTorch's exception; NCCL prints the CUDA error before it).
constexpr std::array<std::string_view, 8> kOomPatterns = {
    "CUDA out of memory",
    "OutOfMemoryError",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "cudaErrorMemoryAllocation",
    "CUDA error: out of memory",
    "RESOURCE_EXHAUSTED: Out of memory",
    "Cuda failure 2 'out of memory'",
    "Cuda failure 'out of memory'",
};

// NCCL's own error names and PyTorch's wording around them (ProcessGroupNCCL).
constexpr std::array<std::string_view, 10> kNcclErrorPatterns = {
    "NCCL error",
    "NCCL Error",
    "ncclUnhandledCudaError",
    "ncclSystemError",
    "ncclInternalError",
    "ncclInvalidArgument",
    "ncclInvalidUsage",
    "ncclRemoteError",
    "NCCL communicator was aborted",
    "Watchdog caught collective operation timeout",
};

// Lines that only point elsewhere: PyTorch's hints after a CUDA error, the
// frame of a traceback, torchrun's failure summary.
constexpr std::array<std::string_view, 13> kHintPrefixes = {
    "Traceback (most recent call last)",
    "File \"",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "CUDA kernel errors might be asynchronously reported",
    "Compile with `TORCH_USE_CUDA_DSA`",
    "Search for `cuda",
    "The above exception was the direct cause of the following exception",
    "During handling of the above exception, another exception occurred",
    "Root Cause",
    "Failures:",
    "<NO_OTHER_FAILURES>",
    "error_file:",
    "local_rank:",
};
constexpr std::array<std::string_view, 2> kHintInfixes = {
    "TORCH_USE_CUDA_DSA",
    "To enable traceback see:",
};
// torchrun's per-rank fields, written "name<spaces>: value".
constexpr std::array<std::string_view, 5> kTorchrunFields = {"time", "host", "rank", "exitcode",
                                                             "error_file"};

constexpr std::array<std::string_view, 5> kExceptionSuffixes = {"Error", "Exception", "Exit",
                                                                "Interrupt", "Failure"};

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The length of the UTF-8 character that starts `text`, when it is a valid
// one (overlong forms and surrogates are not checked); 0 when it is not.
size_t utf8_length(std::string_view text) {
  const auto lead = static_cast<unsigned char>(text[0]);
  const size_t n = lead < 0x80           ? 1
                   : (lead >> 5) == 0x6  ? 2
                   : (lead >> 4) == 0xe  ? 3
                   : (lead >> 3) == 0x1e ? 4
                                         : 0;
  if (n == 0 || n > text.size()) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) return 0;
  }
  return n;
}

// `line` as a reason shows it: ANSI escape sequences (colours) and other
// control characters removed (a tab as a space), invalid UTF-8 written as '?',
// white space trimmed. Valid UTF-8 throughout.
std::string clean_line(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size();) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == 0x1b && i + 1 < line.size() && line[i + 1] == '[') {
      // CSI: parameter and intermediate bytes up to a final byte 0x40-0x7e.
      for (i += 2; i < line.size(); ++i) {
        const auto b = static_cast<unsigned char>(line[i]);
        if (b >= 0x40 && b <= 0x7e) break;
      }
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      if (c == '\t') out += ' ';
      ++i;
    } else if (const size_t n = utf8_length(line.substr(i)); n > 0) {
      out.append(line.substr(i, n));
      i += n;
    } else {
      out += '?';
      ++i;
    }
  }
  return std::string(trim_space(out));
}

// At most kMaxReasonLineChars bytes, cut between UTF-8 characters.
std::string bound(std::string text) {
  if (text.size() <= kMaxReasonLineChars) return text;
  size_t cut = kMaxReasonLineChars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return std::string(trim_space(std::string_view(text).substr(0, cut))) + "...";
}

// `line` without the prefixes torchrun and PyTorch put before a rank's
// output: "[rank1]: ", "[default0]:" (role and local rank), repeated.
std::string_view strip_rank_prefix(std::string_view line) {
  for (;;) {
    if (line.empty() || line.front() != '[') return line;
    size_t i = 1;
    while (i < line.size() && (std::isalpha(static_cast<unsigned char>(line[i])) || line[i] == '_'))
      ++i;
    const size_t digits = i;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    if (i == digits || line.substr(i, 2) != "]:") return line;
    line = trim_space(line.substr(i + 2));
  }
}

// A line of punctuation only, such as torchrun's "=====" or the carets under
// a traceback's frame.
bool is_banner(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x80 && (std::ispunct(u) || u == ' ');
  });
}

bool is_hint(std::string_view line) {
  for (std::string_view p : kHintPrefixes) {
    if (line.starts_with(p)) return true;
  }
  for (std::string_view p : kHintInfixes) {
    if (contains(line, p)) return true;
  }
  for (std::string_view field : kTorchrunFields) {
    if (line.starts_with(field) && trim_space(line.substr(field.size())).starts_with(':')) {
      return true;
    }
  }
  // torchrun's "[1]:" heading a failed rank.
  return line.size() >= 4 && line.front() == '[' && line.ends_with("]:") &&
         std::all_of(line.begin() + 1, line.end() - 2,
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// The exception's qualified name when `line` is the last line of a Python
// traceback: "pkg.mod.SomeError: text", "SomeError:" or a bare "SomeError"
// (the last name capitalised, ending in Error, Exception, Exit, Interrupt or
// Failure); else "".
std::string_view exception_name(std::string_view line) {
  size_t i = 0;
  size_t last = 0;  // where the last dotted component starts
  for (;;) {
    if (i >= line.size() ||
        !(std::isalpha(static_cast<unsigned char>(line[i])) || line[i] == '_')) {
      return {};
    }
    last = i;
    while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_'))
      ++i;
    if (i < line.size() && line[i] == '.') {
      ++i;
      continue;
    }
    break;
  }
  const std::string_view name = line.substr(0, i);
  const std::string_view component = line.substr(last, i - last);
  if (!std::isupper(static_cast<unsigned char>(component.front()))) return {};
  if (std::none_of(kExceptionSuffixes.begin(), kExceptionSuffixes.end(),
                   [&](std::string_view s) { return component.ends_with(s); })) {
    return {};
  }
  const std::string_view rest = line.substr(i);
  if (rest.empty() || rest == ":" || rest.starts_with(": ")) return name;
  return {};
}

// A CUDA assertion without what varies from thread to thread or names the
// build's directories: "Loss.cu:250: kernel: Assertion `...` failed.", or from
// "Assertion" on when that is still too long.
std::string shorten_assertion(std::string_view line, size_t at) {
  const std::string_view assertion = line.substr(at);
  std::string_view prefix = line.substr(0, at);
  if (size_t block = prefix.find("block: ["); block != std::string_view::npos) {
    prefix = prefix.substr(0, block);
  }
  prefix = trim_space(prefix);
  std::string compact(prefix);
  if (size_t slash = prefix.rfind('/'); slash != std::string_view::npos) {
    const size_t space = prefix.find_last_of(' ', slash);
    const size_t token = space == std::string_view::npos ? 0 : space + 1;
    compact = std::string(prefix.substr(0, token)) + std::string(prefix.substr(slash + 1));
  }
  compact = compact.empty() ? std::string(assertion) : compact + " " + std::string(assertion);
  return compact.size() <= kMaxReasonLineChars ? compact : std::string(assertion);
}

// The log's lines, cleaned, in order.
std::vector<std::string> clean_lines(std::string_view log_tail) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= log_tail.size()) {
    size_t end = log_tail.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = log_tail.size();
    const std::string_view line = log_tail.substr(start, end - start);
    if (!line.starts_with(kColoLogNotePrefix)) lines.push_back(clean_line(line));
    start = end + 1;
  }
  return lines;
}

// The value of a field of torchrun's failure report ("  rank      : 1
// (local_rank: 1)"), or "" when `line` is not that field.
std::string_view torchrun_field(std::string_view line, std::string_view name) {
  line = trim_space(line);
  if (!line.starts_with(name)) return "";
  line = trim_space(line.substr(name.size()));
  return line.starts_with(':') ? trim_space(line.substr(1)) : "";
}

// torchrun's "Root Cause (first observed failure):" block, summed up:
// "torchrun: rank 1 (local_rank: 1) failed first, exitcode 1 (pid: 749)",
// with its traceback field when that says more than where to look.
std::optional<std::string> torchrun_root_cause(const std::vector<std::string>& lines) {
  auto it = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("Root Cause (first observed failure)") != std::string::npos;
  });
  if (it == lines.end()) return std::nullopt;
  std::string rank, exitcode, traceback;
  for (++it; it != lines.end() && !is_banner(*it); ++it) {
    if (auto v = torchrun_field(*it, "rank"); !v.empty()) rank = v;
    if (auto v = torchrun_field(*it, "exitcode"); !v.empty()) exitcode = v;
    if (auto v = torchrun_field(*it, "traceback"); !v.empty() && !is_hint(v)) traceback = v;
  }
  if (rank.empty()) return std::nullopt;
  std::string out = "torchrun: rank " + rank + " failed first";
  if (!exitcode.empty()) out += ", exitcode " + exitcode;
  if (!traceback.empty()) out += ": " + traceback;
  return out;
}

}  // namespace

std::optional<std::string> find_oom_message(const std::string& log_text) {
  // The last matching line: the one closest to where the job died.
  size_t end = log_text.size();
  while (end > 0) {
    size_t start = log_text.find_last_of("\r\n", end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string_view line(log_text.data() + start, end - start);
    for (std::string_view pattern : kOomPatterns) {
      if (line.find(pattern) != std::string_view::npos) return std::string(line);
    }
    if (start == 0) break;
    end = start - 1;
  }
  return std::nullopt;
}

InformativeLine find_informative_log_line(std::string_view log_tail) {
  const std::vector<std::string> lines = clean_lines(log_tail);

  std::optional<std::string> nccl_error;
  std::optional<std::string> exception;  // the first, wrappers aside
  std::optional<std::string> wrapper;    // the first CalledProcessError
  std::optional<std::string> nccl_warning;
  std::optional<std::string> tool_error;
  for (const std::string& cleaned : lines) {
    const std::string_view line = strip_rank_prefix(cleaned);
    if (!tool_error && line.starts_with("==ERROR==")) tool_error = std::string(line);
    if (const size_t at = line.find("Assertion `");
        at != std::string_view::npos && contains(line.substr(at), " failed")) {
      return {bound(shorten_assertion(line, at)), LogLineKind::kCudaAssertion};
    }
    if (!nccl_error && std::any_of(kNcclErrorPatterns.begin(), kNcclErrorPatterns.end(),
                                   [&](std::string_view p) { return contains(line, p); })) {
      nccl_error = std::string(line);
    }
    if (!nccl_warning && contains(line, "NCCL WARN")) nccl_warning = std::string(line);
    if (exception) continue;
    const std::string_view name = exception_name(line);
    if (name.empty() || name.ends_with("ChildFailedError")) continue;
    if (name.ends_with("CalledProcessError")) {
      if (!wrapper) wrapper = std::string(line);
      continue;
    }
    exception = std::string(line);
  }
  if (nccl_error) return {bound(*nccl_error), LogLineKind::kNcclError};
  if (exception) return {bound(*exception), LogLineKind::kException};
  if (wrapper) return {bound(*wrapper), LogLineKind::kException};
  if (tool_error) return {bound(*tool_error), LogLineKind::kToolError};
  if (nccl_warning) return {bound(*nccl_warning), LogLineKind::kNcclWarning};
  if (auto root = torchrun_root_cause(lines)) {
    return {bound(*root), LogLineKind::kTorchrunRootCause};
  }
  if (auto oom = find_oom_message(std::string(log_tail))) {
    return {bound(clean_line(*oom)), LogLineKind::kOutOfMemory};
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const std::string_view line = strip_rank_prefix(*it);
    if (line.empty() || is_banner(line) || is_hint(line)) continue;
    return {bound(*it), LogLineKind::kLastLine};
  }
  return {};
}

std::string informative_log_line(std::string_view log_tail) {
  return find_informative_log_line(log_tail).text;
}

}  // namespace colo
