// Prometheus metrics of colo serve: the text exposition format (0.0.4) of a
// snapshot, as GET /metrics serves it (docs/serve.md lists every name).
//
// GPU metrics take dcgm-exporter's names, units and labels (those of its
// default counters; see docs/serve.md for what differs): DCGM_FI_PROF_* ratios 0-1, PCIe in
// bytes per second, DCGM_FI_DEV_FB_* in MiB, power in W, energy in mJ (a
// counter). A GPU's series carry gpu, UUID, device ("nvidia0"), modelName and
// Hostname, plus hpc_job (the service job's id, dcgm-exporter's label for the
// owning job; never `job`, which is Prometheus's own scrape-job label) and
// user while exactly one job of the service runs there (several jobs share a
// GPU under collocation: its device-wide numbers are then nobody's alone). A metric appears only
// for GPUs whose latest sample has its value (GPM metrics need a Hopper GPU; the simulated backend
// models a subset).
//
// colo's own metrics start with colo_: the service, the queue, and per job
// (labels hpc_job, user, name, and the GPU's labels while it runs) its state,
// epoch, samples/s, peak memory, attempts and predicted end, and a protected
// job's floor, its latest speed of solo and its steady time below the floor.
#pragma once

#include <string>

#include "serve/snapshot.h"

namespace colo {

std::string prometheus_metrics(const ServiceSnapshot& snapshot);

}  // namespace colo
