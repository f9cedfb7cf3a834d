#include "sharing/mps_users.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace colo {

std::string to_string(MpsUsers mode) {
  switch (mode) {
    case MpsUsers::kAuto:
      return "auto";
    case MpsUsers::kShared:
      return "shared";
    case MpsUsers::kSeparate:
      return "separate";
  }
  return "auto";
}

Result<MpsUsers> parse_mps_users(std::string_view text) {
  for (MpsUsers mode : {MpsUsers::kAuto, MpsUsers::kShared, MpsUsers::kSeparate}) {
    if (text == to_string(mode)) return mode;
  }
  return Error(fmt::format("--mps-users: '{}' is none of auto, shared, separate", text));
}

bool help_offers_multiuser(std::string_view help_text) {
  std::string lower(help_text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("multiuser") != std::string::npos || lower.find("multi-user") != std::string::npos)
    return true;
  // "-M" as an option of its own: at a word's start, not inside "-MAX" or "--M...".
  static const std::regex option(R"((^|[\s,\[])-M($|[\s,\]|]))");
  const std::string text(help_text);
  return std::regex_search(text, option);
}

namespace {

MpsUsersChoice separate_because(std::string_view why) {
  return MpsUsersChoice{false,
                        fmt::format("MPS: a daemon per user ({}; users' jobs time-slice)", why)};
}

}  // namespace

Result<MpsUsersChoice> choose_mps_users(MpsUsers requested, bool offers, bool root, unsigned uid,
                                        std::string_view control_program) {
  constexpr const char* kShared = "MPS: one multi-user server per GPU (users share it)";
  switch (requested) {
    case MpsUsers::kSeparate:
      return separate_because("--mps-users separate");
    case MpsUsers::kShared:
      if (!root) {
        return Error(fmt::format(
            "--mps-users shared needs colo serve to run as root (it runs as uid {}): a "
            "multi-user MPS daemon is started as root, and a service of another user takes "
            "only that user's jobs; start it as root (the packaged unit does) or leave "
            "--mps-users out",
            uid));
      }
      if (!offers) {
        return Error(fmt::format(
            "--mps-users shared: the MPS control program {} offers no multi-user mode (its "
            "help text lists no -M): it needs an NVIDIA driver with multi-user MPS (Volta or "
            "newer; driver 580 has it); use --mps-users separate or auto",
            control_program));
      }
      return MpsUsersChoice{true, kShared};
    case MpsUsers::kAuto:
      break;
  }
  if (!root) {
    return separate_because(fmt::format(
        "colo serve runs as uid {}, not root, and takes only its own user's jobs", uid));
  }
  if (!offers) return separate_because("the driver has no multi-user mode");
  return MpsUsersChoice{true, kShared};
}

MpsUsersChoice after_mps_probe(const MpsUsersChoice& choice,
                               const Result<MpsProbeOutcome>& outcome) {
  if (!choice.shared) return choice;
  if (!outcome.ok()) {
    return separate_because(
        fmt::format("the multi-user server could not be proved: {}", outcome.error().message()));
  }
  const double seconds = static_cast<double>(outcome->waited_ms) / 1000;
  if (!outcome->together) {
    return separate_because(fmt::format(
        "under the multi-user server a non-root client's first CUDA work did not run beside "
        "colo's within {:.0f} s",
        seconds));
  }
  return MpsUsersChoice{
      true, fmt::format("MPS: one multi-user server per GPU (users share it; a non-root client's "
                        "first CUDA work ran beside colo's in {:.1f} s)",
                        seconds)};
}

}  // namespace colo
