#include "jobs/gpu_fault.h"

#include <algorithm>
#include <array>

#include "common/text.h"
#include "jobs/log_reason.h"

namespace colo {
namespace {

// Lower-case substrings. The CUDA runtime's and driver's messages for its
// error codes, as PyTorch prints them ("CUDA error: <message>"), and the codes'
// names.
constexpr std::array<std::string_view, 14> kOwnPatterns = {
    "device-side assert triggered",
    "an illegal memory access was encountered",
    "unspecified launch failure",
    "misaligned address",
    "an illegal instruction was encountered",
    "illegal address",
    "cudaerrorillegaladdress",
    "cudaerrorassert",
    "cudaerrorlaunchfailure",
    "cudaerrormisalignedaddress",
    "cudaerrorillegalinstruction",
    "cuda_error_illegal_address",
    "cuda_error_assert",
    "cuda_error_launch_failed",
};
constexpr std::array<std::string_view, 11> kAffectedPatterns = {
    "mps client has been terminated",
    "cudaerrormpsclientterminated",
    "mps server is not ready",
    "cudaerrormpsservernotready",
    "busy or unavailable",
    "cudaerrordevicesunavailable",
    "mps client failed to connect",
    "cudaerrormpsconnectionfailed",
    "remote procedural call between the mps server",
    "cudaerrormpsrpcfailure",
    "cuda_error_mps_",
};

template <size_t N>
bool matches(const std::string& lowered, const std::array<std::string_view, N>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](std::string_view p) { return lowered.find(p) != std::string::npos; });
}

}  // namespace

GpuFaultSeen find_gpu_fault(std::string_view log_text) {
  // Only the client whose kernel asserted prints the assertion.
  if (InformativeLine line = find_informative_log_line(log_text);
      line.kind == LogLineKind::kCudaAssertion)
    return {GpuFault::kOwn, line.text, true};
  GpuFaultSeen affected;
  size_t start = 0;
  while (start < log_text.size()) {
    size_t end = log_text.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = log_text.size();
    const std::string_view line = log_text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line.starts_with(kColoLogNotePrefix)) continue;
    const std::string lowered = ascii_lower(line);
    if (matches(lowered, kOwnPatterns))
      return {GpuFault::kOwn, std::string(trim_space(line)), false};
    if (affected.kind == GpuFault::kNone && matches(lowered, kAffectedPatterns))
      affected = {GpuFault::kAffected, std::string(trim_space(line)), false};
  }
  return affected;
}

}  // namespace colo
