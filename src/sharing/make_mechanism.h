// The one place that knows every Mechanism (plain_sharing, mps_mechanism,
// mig_mechanism): makes the one a run asks for, and cleans up what the
// mechanisms of a colo that died left behind. mechanism.h is the interface
// alone; the mechanisms include it and this unit includes them, so the
// includes run one way.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "sharing/mechanism.h"
#include "sharing/mps_user_probe.h"
#include "sharing/mps_users.h"

namespace colo {

// The mechanism of `kind`. mps is refused here, before a run is recorded, when
// its control program is not on PATH; mig when `inputs` has no backend or
// the backend cannot create MIG instances (each error says what to use instead).
Result<std::unique_ptr<Mechanism>> make_mechanism(MechanismKind kind,
                                                  const MechanismOptions& options,
                                                  const MechanismInputs& inputs = {});

// Whether every user's jobs share one multi-user MPS server
// (sharing/mps_users.h): asks the control program of `options` for its help
// text once (help_offers_multiuser()), and chooses for `requested` as colo
// runs now (root or not). An error when `shared` cannot be had, or when the
// help text cannot be read and `shared` was asked for.
Result<MpsUsersChoice> decide_mps_users(MpsUsers requested, const MechanismOptions& options);

// For a choice of the shared server: starts a multi-user daemon of its own
// (as make_mechanism()'s would be, below the same state directory, reached
// through `group`) for the one GPU `gpu_uuid`, runs `probe` through it,
// stops it, and returns after_mps_probe() of what the probe saw (a daemon
// that would not start is the probe's error). A choice that is not shared is
// returned as it is.
MpsUsersChoice prove_shared_mps(const MpsUsersChoice& choice, const MechanismOptions& options,
                                gid_t group, const std::string& gpu_uuid, MpsUserProbe& probe);

// Finds MPS daemons that an earlier colo started and that outlived it (colo
// was killed), shuts them down and removes their directories. Never touches a
// daemon colo did not start: only those recorded in <state_dir>/*/owner.json
// by a colo process on this host that is no longer alive. Returns one line per
// daemon cleaned up ("stopped MPS daemon left by colo pid 1234 (pipe dir
// ...)"), and one per directory it had to leave alone because its record is
// unreadable or a process survived (the line says why).
Result<std::vector<std::string>> cleanup_stale_mps_daemons(const MechanismOptions& options);

// Destroys the MIG instances an earlier colo created and did not destroy
// because it was killed (see MigMechanism), never any other instance. Returns
// one line per record handled. With a backend that cannot change MIG (sim),
// it only says that records are waiting.
Result<std::vector<std::string>> cleanup_stale_mig_instances(const MechanismOptions& options,
                                                             GpuBackend& backend);

}  // namespace colo
