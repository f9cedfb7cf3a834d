// MpsUserProbe: proves, once as colo serve starts, that a multi-user MPS
// server really serves two users' clients together before the service
// relies on it (the control program's help text only says that it can).
//
// MPS's default daemon runs different users' servers one after another: a
// second user's client waits until the first user's clients end. The probe
// reproduces exactly that situation: a client of colo's own user does its
// first CUDA work and keeps its context; a client of another user then does
// its first CUDA work on the same GPU through the same server. Together: the
// second answers within the bound. Not together: it is still waiting when
// the bound runs out.
//
// ProcessMpsUserProbe runs both clients as child processes of colo's own
// binary (`colo mps-probe-client`, sharing/mps_probe_client.h), the second
// with another user's identity, and ends both before it returns. Each takes
// a CUDA context on the GPU for a few seconds.
//
// Not thread-safe; one probe at a time.
#pragma once

#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "sharing/mechanism.h"
#include "sharing/mps_users.h"

namespace colo {

class MpsUserProbe {
 public:
  virtual ~MpsUserProbe() = default;
  // Runs the two clients with `client_env` on top of colo's environment
  // (the server's pipe directory and the GPU: CUDA_MPS_PIPE_DIRECTORY,
  // CUDA_VISIBLE_DEVICES). An error when colo's own client could not do its
  // first CUDA work (then nothing is proved either way), or a child could not
  // be started; else the outcome.
  virtual Result<MpsProbeOutcome> run(const Environment& client_env) = 0;
};

struct MpsUserProbeOptions {
  std::string program;                 // colo's own binary (/proc/self/exe)
  ClientUser other{65534, 65534, {}};  // whose client is the second
  int own_timeout_ms = 60'000;         // colo's client: its first CUDA work (cuInit is slow)
  int other_timeout_ms = 20'000;       // the other user's client: the verdict's bound
};

class ProcessMpsUserProbe final : public MpsUserProbe {
 public:
  // Borrows `clock`, which must outlive it.
  ProcessMpsUserProbe(MpsUserProbeOptions options, Clock& clock)
      : options_(std::move(options)), clock_(clock) {}
  Result<MpsProbeOutcome> run(const Environment& client_env) override;

 private:
  MpsUserProbeOptions options_;
  Clock& clock_;
};

}  // namespace colo
