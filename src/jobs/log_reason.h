// Why a job failed, read from the tail of its log: the one line that says most
// (a CUDA assertion, an NCCL error, the exception a traceback ends with, an
// out-of-memory message, else the last line that is not a banner or a hint),
// cleaned for a terminal and bounded, for a failed job's reason.
//
// Pure functions of the text; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace colo {

// How colo's own notes in a job's log begin (append_note_to_log). Such lines
// are colo's, not the job's: the functions below skip them.
inline constexpr std::string_view kColoLogNotePrefix = "colo: ";

// The most a reason's log line holds, in bytes ("..." added when cut).
inline constexpr size_t kMaxReasonLineChars = 200;

// What kind of line informative_log_line chose, most informative first.
enum class LogLineKind {
  kCudaAssertion,      // the first "Assertion `...` failed" (a device-side assert)
  kNcclError,          // the first NCCL error ("NCCL error", ncclSystemError, "NCCL WARN", ...)
  kException,          // the first exception a traceback ends with, wrappers skipped
  kToolError,          // the first "==ERROR==" line (Nsight Compute, Nsight Systems)
  kNcclWarning,        // the first "NCCL WARN" (NCCL_DEBUG output; may be harmless)
  kTorchrunRootCause,  // torchrun's "Root Cause (first observed failure)": which rank, how
  kOutOfMemory,        // the last out-of-memory line (find_oom_message)
  kLastLine,           // the last line that is not a banner or a known hint
  kNone,               // no line at all ("")
};

struct InformativeLine {
  std::string text;  // cleaned and bounded; "" with kNone
  LogLineKind kind = LogLineKind::kNone;
};

// The most informative line of `log_tail` (stdout and stderr together), by
// kind in LogLineKind's order. Cleaned as a failed job's reason shows it: ANSI
// escape sequences and other control characters removed, invalid UTF-8 written
// as '?', white space trimmed, a torchrun rank prefix ("[rank1]: ",
// "[default0]:") dropped from kinds above kOutOfMemory, and at most
// kMaxReasonLineChars bytes, cut between characters ("..." added). A CUDA
// assertion is shortened to "Loss.cu:250: kernel: Assertion `...` failed."
// (directories and the block/thread dropped). Lines end at '\n' or '\r'
// (progress bars redraw after '\r').
InformativeLine find_informative_log_line(std::string_view log_tail);

// find_informative_log_line(log_tail).text.
std::string informative_log_line(std::string_view log_tail);

// Finds a GPU out-of-memory message in log text ("CUDA out of memory",
// "torch.OutOfMemoryError", "CUBLAS_STATUS_ALLOC_FAILED", ...). Returns the
// last matching line, as it is (not cleaned).
std::optional<std::string> find_oom_message(const std::string& log_text);

}  // namespace colo
