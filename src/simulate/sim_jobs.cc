#include "simulate/sim_jobs.h"

#include <fmt/format.h>

#include "common/units.h"
#include "jobs/job_signature.h"

namespace colo {
namespace {

// Lines of sources and assumptions kept: one per kind of job, up to this.
constexpr size_t kMaxSourceLines = 50;

}  // namespace

SimJobSet make_sim_jobs(const JobFile& file, const std::map<std::string, JobProfile>& known) {
  SimJobSet out;
  std::map<std::string, int> count;
  std::vector<size_t> first_of_kind;  // the first job of each signature, in file order
  for (const JobSpec& spec : file.jobs) {
    SimJob job;
    job.name = spec.name;
    job.signature = job_signature(spec);
    job.label = spec.group;
    if (auto it = known.find(job.signature); it != known.end()) job.known = it->second;
    job.truth = job.known;
    if (count[job.signature]++ == 0) {
      first_of_kind.push_back(out.jobs.size());
      auto assume = [&](const char* what, const std::string& value) {
        if (out.assumptions.size() < kMaxSourceLines) {
          out.assumptions.push_back(fmt::format("{}: {} assumed {} (no store profile, no hint)",
                                                spec.group, what, value));
        }
      };
      if (!job.truth.peak_memory_bytes) assume("peak memory", format_bytes(kAssumedMemoryBytes));
      if (!job.truth.sm_active_pct)
        assume("SM activity", fmt::format("{:.0f}%", kAssumedSmActivePct));
      if (!job.truth.solo_ms) assume("time alone", format_duration_ms(kAssumedSoloMs));
    }
    if (!job.truth.peak_memory_bytes) job.truth.peak_memory_bytes = kAssumedMemoryBytes;
    if (!job.truth.sm_active_pct) job.truth.sm_active_pct = kAssumedSmActivePct;
    if (!job.truth.solo_ms) job.truth.solo_ms = kAssumedSoloMs;
    if (!job.truth.samples_per_s) job.truth.samples_per_s = 1000.0;
    out.jobs.push_back(std::move(job));
  }
  for (size_t i : first_of_kind) {
    if (out.sources.size() == kMaxSourceLines) {
      out.sources.push_back(
          fmt::format("... and {} more kinds of job", first_of_kind.size() - kMaxSourceLines));
      break;
    }
    const SimJob& job = out.jobs[i];
    const JobProfile& t = job.truth;
    out.sources.push_back(
        fmt::format("{} x{}: {} peak, {:.0f}% SM, {:.0f}% busy, {} alone; from {}", job.label,
                    count[job.signature], format_bytes(*t.peak_memory_bytes), *t.sm_active_pct,
                    t.gpu_busy_pct(), format_duration_ms(*t.solo_ms),
                    job.known.source.empty() ? "assumptions" : job.known.source));
  }
  return out;
}

}  // namespace colo
