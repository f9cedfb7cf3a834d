#include "run/engine_policy.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>

#include "analysis/stored.h"
#include "common/units.h"
#include "jobs/job_features.h"
#include "jobs/job_spec.h"
#include "sched/auto_scheduler.h"
#include "sched/family.h"
#include "sched/gang_scheduler.h"
#include "sched/quota_scheduler.h"

namespace colo {
namespace {

// CPUs this process may run on, and the machine's memory (for the auto
// policy's accounting of shared loaders).
double host_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

uint64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

// The mechanism's lever over an opportunistic client (sched/qos_placement.h).
QosShare qos_share_of(MechanismKind mechanism) {
  if (mechanism == MechanismKind::kNaive) return QosShare::kNone;
  return mechanism == MechanismKind::kMig ? QosShare::kInstance : QosShare::kPriority;
}

std::unique_ptr<Scheduler> make_scheduler(RunReader& store, const PolicyInputs& in,
                                          EnginePolicy& out) {
  const int limit = in.jobs_per_gpu;
  std::vector<LearnedProfile>& measured = out.knowledge.measured;
  if (in.policy != "auto") {
    std::vector<DeviceSlots> slots;
    for (const DeviceInfo& d : in.devices) slots.push_back({d.index, d.memory_total_bytes, limit});
    return std::make_unique<GangScheduler>(
        std::make_unique<FixedScheduler>(
            slots, fmt::format("fixed, up to {} per GPU", count_of(limit, "job")), 2,
            qos_share_of(in.mechanism)),
        kMaxJobAttempts - 1);
  }
  AutoOptions auto_options;
  auto_options.mode =
      in.mechanism == MechanismKind::kNaive ? ShareMode::kTimeSliced : ShareMode::kSpatial;
  auto_options.owners_time_slice = in.users_time_slice;
  auto_options.qos_share = qos_share_of(in.mechanism);
  auto_options.max_jobs_per_gpu = limit;
  auto_options.memory_limits = in.mechanism == MechanismKind::kMps;
  auto_options.max_retries = kMaxJobAttempts - 1;
  auto_options.host_cpus = host_cpu_count();
  auto_options.host_memory_bytes = host_memory_bytes();
  std::vector<GpuSlot> slots;
  for (const DeviceInfo& d : in.devices) slots.push_back({d.index, d.memory_total_bytes});
  InterferenceModel model;
  if (Result<InterferenceModel> fitted = calibrated_model(store, model, measured); fitted.ok())
    model = *fitted;
  out.events.push_back("auto: interference model: " + model.describe());
  out.knowledge.priors.emplace(prior_samples(measured, in.devices.front().name, in.simulated),
                               in.devices.front().memory_total_bytes);
  return std::make_unique<GangScheduler>(
      std::make_unique<AutoScheduler>(slots, auto_options, model), kMaxJobAttempts - 1,
      auto_options.memory_limits);
}

}  // namespace

EnginePolicy make_engine_policy(RunReader& store, const PolicyInputs& in) {
  EnginePolicy out;
  Result<std::vector<LearnedProfile>> stored = learn_profiles(store);
  if (!stored.ok())
    out.events.push_back("warning: no profiles from the store: " + stored.error().message());
  std::vector<LearnedProfile>& measured = out.knowledge.measured;
  measured = stored.ok() ? *stored : std::vector<LearnedProfile>{};
  for (const LearnedProfile& p : in.profiles_elsewhere) {
    bool known = std::any_of(measured.begin(), measured.end(), [&](const LearnedProfile& m) {
      return m.signature == p.signature && m.gpu_name == p.gpu_name && m.simulated == p.simulated;
    });
    if (!known) measured.push_back(p);
  }
  out.knowledge.gpu_name = in.devices.front().name;
  out.knowledge.simulated = in.simulated;
  out.scheduler = make_scheduler(store, in, out);
  if (in.quotas) out.scheduler = std::make_unique<QuotaScheduler>(std::move(out.scheduler));
  return out;
}

std::optional<PolicyKnowledge::Introduction> PolicyKnowledge::introduce(
    const std::string& signature, const JobSpec& spec, const std::optional<HostCost>& host_cost) {
  if (!introduced.insert(signature).second) return std::nullopt;
  Introduction out;
  ProfilesBySignature known = known_profiles(measured, {spec}, gpu_name, simulated);
  auto it = known.find(signature);
  if (it != known.end() && it->second.samples_per_s)
    solo_rates[signature] = *it->second.samples_per_s;
  SignatureFacts& facts = out.facts;
  facts.label = spec.group;
  facts.host_cost = host_cost;
  if (!spec.family.empty()) {
    facts.family =
        FamilyMember{spec.family, instance_label(spec.name), spec.params, spec.resource_params};
    // The family's instances the store measured, once per family.
    if (families_loaded.insert(spec.family).second) {
      for (auto& [family, instances] : family_instances(measured, {spec}, gpu_name, simulated))
        std::move(instances.begin(), instances.end(), std::back_inserter(facts.family_instances));
    }
  }
  if (it != known.end()) facts.profile = out.known = it->second;
  if (priors) facts.prior = priors->prior(job_features(spec.command));
  return out;
}

SchedJob PolicyKnowledge::queued_as(size_t key, const std::string& signature, const JobSpec& spec,
                                    uint32_t owner) const {
  std::optional<uint64_t> memory = spec.gpu_memory_bytes;
  if (!memory) {
    for (const LearnedProfile& p : measured) {
      if (p.signature == signature && p.simulated == simulated && p.profile.peak_memory_bytes)
        memory = std::max(memory.value_or(0), *p.profile.peak_memory_bytes);
    }
  }
  SchedJob queued{key, signature, memory, spec.gpus};
  if (spec.sm_activity_pct) queued.sm_active_pct = *spec.sm_activity_pct;
  queued.solo_time_ms = spec.solo_time_ms;
  queued.owner = owner;
  queued.priority = spec.priority;
  queued.qos = spec.qos;
  queued.min_speed = spec.min_speed;
  return queued;
}

std::string describe_known_profile(const std::string& group, const JobProfile& p) {
  return fmt::format(
      "auto: {} profile: {} peak, {} SM activity, {}; from {}", group,
      p.peak_memory_bytes ? format_bytes(*p.peak_memory_bytes) : "memory unknown",
      p.sm_active_pct ? fmt::format("{:.0f}%", *p.sm_active_pct) : "unknown",
      !p.samples_per_s ? std::string("rate unknown alone")
      : p.has_solo_rate()
          ? fmt::format("{:.0f} samples/s alone", *p.samples_per_s)
          : fmt::format("{:.0f} samples/s beside other jobs (none alone yet)", *p.samples_per_s),
      p.source);
}

}  // namespace colo
