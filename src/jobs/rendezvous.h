// Rendezvous for gangs (jobs with `gpus = N`): a free TCP port where their
// ranks meet (torchrun --master_port {port}), given to the job when it starts.
#pragma once

#include "common/result.h"
#include "jobs/job_supervisor.h"

namespace colo {

// The job's port: COLO_PORT, and MASTER_PORT for a gang (torch.distributed's
// env:// rendezvous and Lightning read it) unless the job sets it itself.
inline constexpr const char* kPortEnv = "COLO_PORT";

// A TCP port nothing listens on now (the kernel's choice for port 0 on the
// loopback address). Another process may take it before the job binds it,
// as with every such choice; the gang then fails and is run again.
Result<int> free_tcp_port();

// When the request asks for a port ({port} in its argv, environment values
// or working directory: JobSpec's kPortPlaceholder) or is a gang, chooses
// one, puts it in place of each {port} and sets kPortEnv (and MASTER_PORT
// for a gang). Otherwise leaves the request as it is.
Status fill_in_port(LaunchRequest& request, bool gang);

}  // namespace colo
