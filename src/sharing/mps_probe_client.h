// The client half of the multi-user MPS probe (sharing/mps_user_probe.h):
// `colo mps-probe-client`, a command for colo's own use that does one first
// piece of CUDA work and says when it is done.
//
// Contract: loads the CUDA driver library (libcuda.so.1) at run time, as
// colo loads NVML (colo links nothing of NVIDIA's), then on device 0 of its
// CUDA_VISIBLE_DEVICES, through the MPS server of its
// CUDA_MPS_PIPE_DIRECTORY when that is set: cuInit, retains the primary
// context, allocates 1 MiB, sets it and synchronizes. Then it prints one
// line on stdout, "ready <ms>" (milliseconds from its start), and flushes.
// With `hold`, it keeps its context until its stdin ends (the probe closes
// it), else it exits at once. Returns the process's exit code: 0 when it
// printed ready; 1 when the driver could not be loaded or a call failed
// (one line on stderr names the call and the driver's error).
#pragma once

namespace colo {

int run_mps_probe_client(bool hold);

}  // namespace colo
