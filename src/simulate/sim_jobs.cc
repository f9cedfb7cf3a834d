#include "simulate/sim_jobs.h"

#include <fmt/format.h>

#include "common/units.h"
#include "jobs/job_signature.h"

namespace colo {

SimJobSet make_sim_jobs(const JobFile& file, const std::map<std::string, JobProfile>& known) {
  SimJobSet out;
  std::map<std::string, int> count;
  std::vector<std::string> order;
  for (const JobSpec& spec : file.jobs) {
    SimJob job;
    job.name = spec.name;
    job.signature = job_signature(spec);
    job.label = spec.group;
    if (auto it = known.find(job.signature); it != known.end()) job.known = it->second;
    job.truth = job.known;
    if (count[job.signature]++ == 0) {
      order.push_back(job.signature);
      auto assume = [&](const char* what, const std::string& value) {
        out.assumptions.push_back(
            fmt::format("{}: {} assumed {} (no store profile, no hint)", spec.group, what, value));
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
  for (const std::string& sig : order) {
    auto it = std::find_if(out.jobs.begin(), out.jobs.end(),
                           [&](const SimJob& j) { return j.signature == sig; });
    const JobProfile& t = it->truth;
    out.sources.push_back(
        fmt::format("{} x{}: {} peak, {:.0f}% SM, {:.0f}% busy, {} alone; from {}", it->label,
                    count[sig], format_bytes(*t.peak_memory_bytes), *t.sm_active_pct,
                    t.gpu_busy_pct(), format_duration_ms(*t.solo_ms),
                    it->known.source.empty() ? "assumptions" : it->known.source));
  }
  return out;
}

}  // namespace colo
