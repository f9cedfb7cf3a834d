// A job's command under Nsight Compute (ncu): alone on its GPU, or as one
// client of an MPS server among others.
//
// Either way ncu profiles a bounded kernel range (`--launch-count`: the
// first N kernels) with its clock control off: by default ncu locks the
// GPU's clocks to base while it profiles, which would slow every job
// sharing the GPU.
//
// Under MPS, ncu profiles no MPS client on its own ("Profiling is not supported with
// Multi-Process Server (MPS) enabled ... Start ncu with --mps client"). It
// takes two processes: the job under `ncu --mps client`, which waits for a
// control to attach over a local TCP port, and `ncu --mps control
// --mps-num-clients 1`, which attaches, profiles and writes the report. The
// client refuses --export and --clock-control (they are the control's to
// say). Both measured on an H100, driver 580, ncu 2025.3.1: the job ended ok
// and the control wrote its report, its neighbour in the same server kept
// training (docs/results/2026-12-06-h100-ncu-mps-modes).
//
// colo starts the pair as the job's one command, `colo ncu-mps-pair ...`
// (hidden), run as the job's user in the job's process group and cgroup:
// stopping the job stops both. Each pair has a port of its own (the client
// listens only there, the control looks only there), so two profiled jobs
// on one host never attach to each other's clients.
//
// ncu runs one MPS control per machine: a second control, on the same MPS
// server or another, fails with "Failed to discover MPS clients. Is another
// MPS control server running?", while one started after the first control
// ended works, its job still training under its client (H200, driver 580,
// ncu 2025.3.1; docs/results/2026-12-06-h200-ncu-mps-two). So a pair first
// takes the machine's lock kNcuMpsControlLock in the lock directory
// (gpu/gpu_lock.h) and holds it while its control runs (the control ends
// once it profiled its kernels and wrote its report); a second profiled job
// waits there, its log saying for whom, its GPU time not yet spent.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace colo {

// The machine's lock of ncu's one MPS control (gpu/gpu_lock.h).
inline constexpr char kNcuMpsControlLock[] = "ncu-mps-control";

struct NcuLaunch {
  std::string ncu;                   // the ncu binary (found on PATH when the job started)
  std::string report;                // --export: the report's path without ".ncu-rep"
  int launch_count = 10;             // kernels profiled, from the first
  int port = 0;                      // an MPS pair's own port (the client listens there)
  std::vector<std::string> command;  // the job's own argv
  std::string lock_dir;              // an MPS pair's lock directory (see above)
};

// The job's argv under ncu alone (no MPS server): ncu launches the command
// and profiles it and its child processes.
std::vector<std::string> ncu_alone_argv(const NcuLaunch& launch);

// The job's argv for `colo_binary ncu-mps-pair`, which reads it back with
// the hidden subcommand's flags (cli): the pair's fields, then "--", then
// the command.
std::vector<std::string> ncu_mps_pair_argv(const std::string& colo_binary, const NcuLaunch& pair);

// The two processes' argv: the control carries what to profile and where
// its report goes; the client only its mode, its port and the command.
std::vector<std::string> ncu_control_argv(const NcuLaunch& pair);
std::vector<std::string> ncu_client_argv(const NcuLaunch& pair);

// Runs the pair as children of this process (stdout and stderr shared, the
// environment inherited) and returns the exit code for the job:
//  - the client's, once it and the control ended;
//  - when the control ends with an error while the client runs (the client
//    would wait for an attach that never comes), the client is stopped and
//    the code is 1, after one line on stderr: "colo: ncu's control exited N
//    ..." (the control's own "==ERROR==" line is above it in the log);
//  - when the client ended but the control has not `report_bound` later, the
//    control is stopped and a line says the report may be missing; the code
//    is still the client's (the training ran to its end).
// 127 when a process could not be started (a line says why), 1 when the
// machine's lock could not be taken or a stop came while waiting for it
// (a line says why). SIGTERM and SIGINT sent to this process are passed on
// to both.
int run_ncu_mps_pair(const NcuLaunch& pair, std::chrono::milliseconds report_bound);

}  // namespace colo
