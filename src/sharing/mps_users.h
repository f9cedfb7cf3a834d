// MpsUsers: whether the jobs of different Unix users share one MPS server
// (colo serve --mps-users auto|shared|separate), decided once as the service
// starts.
//
// MPS's default control daemon runs the servers of different users one after
// another, never together (a second user's client waits until the first
// user's clients have ended: docs/results/2026-11-29-h200-mps-two-users), so
// colo gives each user a daemon of their own, whose servers time-slice the
// GPU as plain contexts do. A control daemon started as root with -M
// (`-multiuser-server`) serves the clients of every user from one root
// server, together (measured on an H100, issue 57). choose_mps_users() picks
// the shared server when the control program offers -M and colo runs as root
// (a non-root service takes its own user's jobs only), unless the operator
// says otherwise; it refuses `shared` where it cannot be had.
//
// In auto mode the service then proves the shared server with a real pair of
// clients (sharing/mps_user_probe.h) before it relies on it; after_mps_probe()
// turns what the probe saw into the final choice.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace colo {

enum class MpsUsers { kAuto, kShared, kSeparate };

// "auto", "shared", "separate".
std::string to_string(MpsUsers mode);
Result<MpsUsers> parse_mps_users(std::string_view text);

// Whether the control program's help text (`nvidia-cuda-mps-control -h`, its
// stdout and stderr together) offers multi-user mode: it lists `-M` as an
// option or names `multiuser` (`-M, --multiuser-server`, as driver 580's
// does). Whether a non-root client's first CUDA work then runs beside
// root's is what the probe (sharing/mps_user_probe.h) finds out.
bool help_offers_multiuser(std::string_view help_text);

// What the service does, and the line it says so with.
struct MpsUsersChoice {
  bool shared = false;  // one multi-user daemon (-d -M) for every user's jobs
  std::string line;     // "MPS: one multi-user server per GPU (users share it)", or
                        // "MPS: a daemon per user (<why>; users' jobs time-slice)"
};

// The mode for `requested`, where the control program `offers` multi-user
// mode (help_offers_multiuser()) and colo runs as root or not (`uid`, for
// the message). `shared` is refused, saying why and what to do, without -M
// or without root.
Result<MpsUsersChoice> choose_mps_users(MpsUsers requested, bool offers, bool root, unsigned uid,
                                        std::string_view control_program);

// What the multi-user probe saw (sharing/mps_user_probe.h): whether a
// non-root client did its first CUDA work while a client of colo's own
// held a context on the same GPU through the same multi-user server, and how
// long it took (or how long it was given).
struct MpsProbeOutcome {
  bool together = false;
  int64_t waited_ms = 0;
};

// The choice once the probe ran, for an auto choice that was `shared`:
// shared stays, its line saying what the probe measured, when the non-root
// client worked beside colo's; else a daemon per user, the line saying why
// (the probe's outcome, or its error). A separate choice is returned as it is.
MpsUsersChoice after_mps_probe(const MpsUsersChoice& choice,
                               const Result<MpsProbeOutcome>& outcome);

}  // namespace colo
