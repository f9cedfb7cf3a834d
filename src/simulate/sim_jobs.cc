#include "simulate/sim_jobs.h"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>

#include "common/units.h"
#include "jobs/job_features.h"
#include "jobs/job_signature.h"
#include "sched/family.h"

namespace colo {
namespace {

// Lines of sources and assumptions kept: one per kind of job, up to this.
constexpr size_t kMaxSourceLines = 50;

}  // namespace

SimJobSet make_sim_jobs(const JobFile& file, const ProfilesBySignature& known,
                        const ProfilesBySignature& usable, const PriorModel* priors) {
  return make_sim_jobs(file, job_signatures(file.jobs), known, usable, priors);
}

SimJobSet make_sim_jobs(const JobFile& file, const std::vector<std::string>& signatures,
                        const ProfilesBySignature& known, const ProfilesBySignature& usable,
                        const PriorModel* priors) {
  SimJobSet out;
  out.jobs.reserve(file.jobs.size());
  // Jobs per signature, hashed: a sweep's thousands of signatures share
  // their length and are looked up twice each.
  std::unordered_map<std::string, int> count;
  count.reserve(file.jobs.size());
  std::vector<size_t> first_of_kind;  // the first job of each signature, in file order
  std::set<std::string> assumed_for;  // families (or signatures) with assumptions listed
  for (size_t i = 0; i < file.jobs.size(); ++i) {
    const JobSpec& spec = file.jobs[i];
    SimJob job;
    job.name = spec.name;
    job.signature = signatures[i];
    job.label = spec.group;
    job.gpus = spec.gpus;
    job.family = spec.family;
    job.instance = instance_label(spec.name);
    job.params = spec.params;
    job.resource_params = spec.resource_params;
    job.qos = spec.qos;
    job.min_speed = spec.min_speed;
    if (auto it = known.find(job.signature); it != known.end()) job.known = it->second;
    if (priors != nullptr) job.prior = priors->prior(job_features(spec.command));
    auto best = usable.find(job.signature);
    job.truth = best != usable.end() ? best->second : job.known;
    if (count[job.signature]++ == 0) {
      first_of_kind.push_back(out.jobs.size());
      const std::string key = spec.family.empty() ? job.signature : spec.family;
      auto assume = [&](const char* what, const std::string& value) {
        if (assumed_for.contains(key + what) || out.assumptions.size() >= kMaxSourceLines) return;
        assumed_for.insert(key + what);
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
  // One line per signature; consecutive signatures of one block that say the
  // same (a grid with nothing known) are one line; at most kMaxSourceLines.
  std::string last_line;
  int last_count = 0;
  size_t kinds_left = first_of_kind.size();
  auto flush = [&] {
    if (last_count > 0) out.sources.push_back(fmt::format(fmt::runtime(last_line), last_count));
    last_count = 0;
  };
  // What a line is formatted from, bit for bit: a kind that matches the one
  // before in all of it has the same line, which is not formatted again (a
  // sweep's thousands of signatures, alike but for their parameters).
  auto same_bits = [](const std::optional<double>& a, const std::optional<double>& b) {
    return a.has_value() == b.has_value() &&
           (!a || std::bit_cast<uint64_t>(*a) == std::bit_cast<uint64_t>(*b));
  };
  auto same_line = [&](const SimJob& a, const SimJob& b) {
    const JobProfile& x = a.truth;
    const JobProfile& y = b.truth;
    return a.label == b.label && x.peak_memory_bytes == y.peak_memory_bytes &&
           same_bits(x.sm_active_pct, y.sm_active_pct) &&
           same_bits(x.gpu_util_pct, y.gpu_util_pct) && x.solo_ms == y.solo_ms &&
           x.source == y.source;
  };
  const SimJob* last_kind = nullptr;
  for (size_t i : first_of_kind) {
    const SimJob& job = out.jobs[i];
    if (last_kind == nullptr || !same_line(*last_kind, job)) {
      const JobProfile& t = job.truth;
      std::string line =
          fmt::format("{} x{{}}: {} peak, {:.0f}% SM, {:.0f}% busy, {} alone; from {}", job.label,
                      format_bytes(*t.peak_memory_bytes), *t.sm_active_pct, t.gpu_busy_pct(),
                      format_duration_ms(*t.solo_ms), !t.source.empty() ? t.source : "assumptions");
      if (line != last_line) {
        flush();
        if (out.sources.size() == kMaxSourceLines) {
          out.sources.push_back(fmt::format("... and {} more kinds of job", kinds_left));
          return out;
        }
      }
      last_line = std::move(line);
    }
    last_kind = &job;
    last_count += count[job.signature];
    --kinds_left;
  }
  flush();
  return out;
}

}  // namespace colo
