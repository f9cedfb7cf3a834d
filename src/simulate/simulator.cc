#include "simulate/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>

#include "common/units.h"
#include "sched/gang_scheduler.h"
#include "sched/qos_model.h"
#include "simulate/gpu_rates.h"

namespace colo {
namespace {

constexpr double kOomFraction = 0.1;  // a job out of memory fails this far in
constexpr size_t kKeepLines = 20;
constexpr size_t kKeepStarts = 1000;
// The closed loop's window (run/floor_watch.h): below its floor this long, a
// protected job gets its newest opportunistic neighbour stopped.
constexpr int64_t kFloorWindowMs = 10'000;

struct Active {
  size_t job = 0;
  std::vector<int> gpus;    // one, or a gang's several
  int gpu = 0;              // gpus.front(), kept here: read at every step
  bool gang = false;        // gpus holds several
  uint64_t order = 0;       // its place in the running list, which keeps start order
  double startup_ms = 0;    // start-up left: wall time, no GPU load, not slowed
  double remaining_ms = 0;  // solo milliseconds of GPU work left
  double fail_at_ms = -1;   // remaining work at which it runs out of memory; -1: never
  bool probe = false;
  int64_t started_ms = 0;
  double rate = 1.0;           // normalized, set each step
  int64_t measured_at_ms = 0;  // a newcomer: when its measurement reaches the policy
  // Started as an opportunistic client (Decision::opportunistic), with this
  // thread percentage (100: uncapped).
  bool opportunistic = false;
  int thread_pct = 100;
  // Protected: when its rate fell below its floor (-1: it is not below).
  int64_t below_since_ms = -1;
  // Its true load (SimJob::truth), read each step: kept here, beside the
  // rest, not looked up in the job list (a day holds tens of thousands).
  uint64_t peak_bytes = 0;
  SoloLoad load;
};

// A job's GPUs, without going to the heap for a job on one.
std::span<const int> gpus_of(const Active& a) {
  return a.gang ? std::span<const int>(a.gpus) : std::span<const int>(&a.gpu, 1);
}

// The rates on a spatially shared GPU holding a protected job (`members`,
// indices into `active`, are every job there), by sched/qos_model.h: the
// protected job at its predicted speed, the others at an equal share of the
// harvest; below normal priority only if every neighbour is opportunistic,
// at the largest thread percentage among them. False (nothing set) when the
// GPU holds no protected job, or more than one.
bool qos_rates(const std::vector<SimJob>& jobs, std::vector<Active>& active,
               const std::vector<size_t>& members) {
  const Active* protector = nullptr;
  int neighbours = 0;
  OpportunisticLevers levers{true, 0};
  for (size_t i : members) {
    if (jobs[active[i].job].qos == QosClass::kProtected) {
      if (protector != nullptr) return false;
      protector = &active[i];
      continue;
    }
    ++neighbours;
    levers.below_normal_priority = levers.below_normal_priority && active[i].opportunistic;
    levers.thread_pct = std::max(levers.thread_pct, active[i].thread_pct);
  }
  if (protector == nullptr) return false;
  if (neighbours == 0) return false;  // alone: the interference model's solo rate
  const double sm = *jobs[protector->job].truth.sm_active_pct / 100.0;
  const QosPrediction p = predict_qos(sm, neighbours, levers);
  for (size_t i : members) {
    const double rate = &active[i] == protector ? p.protected_speed : p.harvest / neighbours;
    active[i].rate = std::min(active[i].rate, rate);
  }
  return true;
}

std::unique_ptr<Scheduler> make_scheduler(const std::vector<SimJob>& jobs, const PolicySpec& policy,
                                          const SimOptions& options) {
  if (policy.kind == PolicyKind::kAuto || policy.kind == PolicyKind::kAutoWarm) {
    std::vector<GpuSlot> slots;
    for (int g = 0; g < options.gpus; ++g) slots.push_back({g, options.gpu_memory_bytes});
    AutoOptions auto_options = options.auto_options;
    auto_options.mode = ShareMode::kSpatial;
    auto s = std::make_unique<GangScheduler>(
        std::make_unique<AutoScheduler>(slots, auto_options, options.model),
        auto_options.max_retries, auto_options.memory_limits);
    s->expect_signatures(jobs.size());
    std::set<std::string> families;
    // One set of facts, each job's assigned over the last one's (their
    // texts and values reuse its memory; the policy copies what it keeps):
    // every field is set for each job.
    SignatureFacts facts;
    for (const SimJob& j : jobs) {
      facts.label = j.label;
      facts.gpus = j.gpus;
      facts.family_instances.clear();
      if (!j.family.empty()) {
        FamilyMember& m = facts.family ? *facts.family : facts.family.emplace();
        m.family = j.family;
        m.name = j.instance;
        m.params = j.params;
        m.resource_params = j.resource_params;
        auto measured = options.family_instances.find(j.family);
        if (families.insert(j.family).second && measured != options.family_instances.end())
          facts.family_instances = measured->second;
      } else {
        facts.family.reset();
      }
      if (policy.kind == PolicyKind::kAutoWarm) {
        facts.profile = j.truth;
      } else if (j.known.peak_memory_bytes || j.known.sm_active_pct) {
        facts.profile = j.known;
      } else {
        facts.profile.reset();
      }
      if (j.prior.admissible()) {
        facts.prior = j.prior;
      } else {
        facts.prior.reset();
      }
      s->introduce(j.signature, facts);
    }
    return s;
  }
  int limit = 1;
  if (policy.kind == PolicyKind::kNaiveAll) limit = std::numeric_limits<int>::max() / 2;
  if (policy.kind == PolicyKind::kMpsAll) limit = kMaxMpsDegree;
  if (policy.kind == PolicyKind::kMpsFixed) limit = policy.degree;
  std::vector<DeviceSlots> slots;
  for (int g = 0; g < options.gpus; ++g) slots.push_back({g, options.gpu_memory_bytes, limit});
  const QosShare share =
      policy.kind == PolicyKind::kNaiveAll ? QosShare::kNone : QosShare::kPriority;
  auto gangs = std::make_unique<GangScheduler>(
      std::make_unique<FixedScheduler>(slots, policy.name, /*max_retries=*/2, share));
  std::set<std::string> introduced;
  for (const SimJob& j : jobs) {
    if (j.gpus <= 1 || !introduced.insert(j.signature).second) continue;
    SignatureFacts facts;
    facts.label = j.label;
    if (j.known.peak_memory_bytes) facts.profile = j.known;
    gangs->introduce(j.signature, facts);
  }
  return gangs;
}

ShareMode mode_of(PolicyKind kind) {
  return kind == PolicyKind::kNaiveAll ? ShareMode::kTimeSliced : ShareMode::kSpatial;
}

}  // namespace

std::vector<PolicySpec> standard_policies(int max_degree) {
  std::vector<PolicySpec> out = {{"exclusive", PolicyKind::kExclusive, 1},
                                 {"naive-all", PolicyKind::kNaiveAll, 0},
                                 {"mps-all", PolicyKind::kMpsAll, 0}};
  for (int k = 2; k <= max_degree; ++k)
    out.push_back({fmt::format("mps-{}", k), PolicyKind::kMpsFixed, k});
  out.push_back({"auto", PolicyKind::kAuto, 0});
  out.push_back({"auto-warm", PolicyKind::kAutoWarm, 0});
  return out;
}

Result<std::vector<PolicySpec>> parse_policies(std::string_view list) {
  std::vector<PolicySpec> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item(
        list.substr(start, comma == std::string_view::npos ? list.npos : comma - start));
    start = comma == std::string_view::npos ? list.size() + 1 : comma + 1;
    if (item.empty()) continue;
    if (item == "exclusive") {
      out.push_back({item, PolicyKind::kExclusive, 1});
    } else if (item == "naive-all") {
      out.push_back({item, PolicyKind::kNaiveAll, 0});
    } else if (item == "mps-all") {
      out.push_back({item, PolicyKind::kMpsAll, 0});
    } else if (item == "auto") {
      out.push_back({item, PolicyKind::kAuto, 0});
    } else if (item == "auto-warm") {
      out.push_back({item, PolicyKind::kAutoWarm, 0});
    } else if (item.starts_with("mps-") && item.size() > 4 &&
               std::all_of(item.begin() + 4, item.end(),
                           [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      const std::string digits = item.substr(4);
      const int degree = digits.size() <= 2 && digits[0] != '0' ? std::stoi(digits) : 0;
      if (degree < 1 || degree > kMaxMpsDegree) {
        return Error(fmt::format(
            "policy '{}': mps-K: K must be 1 to {} (MPS serves at most {} clients per GPU)", item,
            kMaxMpsDegree, kMaxMpsDegree));
      }
      out.push_back({item, PolicyKind::kMpsFixed, degree});
    } else {
      return Error(fmt::format(
          "unknown policy '{}'; policies: exclusive, naive-all, mps-all, mps-K (K jobs per GPU, "
          "e.g. mps-3), auto, auto-warm",
          item));
    }
  }
  if (out.empty()) return Error("no policy given; e.g. --policies exclusive,mps-all,auto");
  return out;
}

PolicyResult simulate_policy(const std::vector<SimJob>& jobs, const PolicySpec& policy,
                             const SimOptions& options) {
  using SteadyClock = std::chrono::steady_clock;
  PolicyResult result;
  result.policy = policy;
  std::unique_ptr<Scheduler> scheduler = make_scheduler(jobs, policy, options);
  const ShareMode mode = mode_of(policy.kind);
  const bool is_auto = policy.kind == PolicyKind::kAuto || policy.kind == PolicyKind::kAutoWarm;
  const bool any_protected = std::any_of(jobs.begin(), jobs.end(), [](const SimJob& j) {
    return j.qos == QosClass::kProtected && j.gpus == 1;
  });

  auto timed = [&](auto&& fn) {
    auto t0 = SteadyClock::now();
    fn();
    double ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
    return ms;
  };

  // Jobs are queued in order as they are submitted (jobs[arrived] next).
  size_t arrived = 0;
  // Each job's fields assigned over the last one's (its signature reuses the
  // text's memory): every field a job sets is set for each.
  SchedJob queued;
  auto enqueue = [&](size_t j) {
    const SimJob& job = jobs[j];
    queued.job = j;
    queued.signature = job.signature;
    queued.memory_hint = job.known.peak_memory_bytes;
    queued.gpus = job.gpus;
    queued.qos = job.qos;
    queued.min_speed = job.min_speed;
    queued.sm_active_pct = job.known.sm_active_pct;
    queued.solo_time_ms = job.known.solo_ms;
    scheduler->enqueue(queued);
  };
  auto arrive = [&](int64_t now_ms) {
    for (; arrived < jobs.size() && jobs[arrived].submit_ms <= now_ms; ++arrived) enqueue(arrived);
  };
  // Work left to jobs stopped for a floor: they resume from their checkpoint.
  std::map<size_t, double> resumed_work;
  std::map<size_t, int> floor_stops;  // by protected job
  // Signatures of protected jobs whose solo rate a run alone taught the policy.
  std::set<std::string> solo_taught;
  double event_ms = timed([&] { arrive(0); });
  result.scheduler_total_ms += event_ms;
  std::vector<int64_t> first_started(jobs.size(), -1);
  double completion_sum = 0;
  double wait_sum = 0;

  std::vector<Active> active;
  // The peak memory of the active jobs on each GPU (each of a gang's GPUs
  // holds its peak): what a job started there finds beside it.
  std::vector<uint64_t> peak_on_gpu(static_cast<size_t>(std::max(1, options.gpus)), 0);
  // The jobs past their start-up on each GPU and the rate of each GPU's
  // (every job's rate but beside a protected job: see below).
  GpuRates gpu_rates(std::max(1, options.gpus), options.model, mode);
  uint64_t started = 0;  // Active::order
  // A job leaves the running list: its memory and load leave its GPUs.
  auto leave = [&](const Active& a) {
    for (int g : gpus_of(a)) peak_on_gpu[static_cast<size_t>(g)] -= a.peak_bytes;
    if (a.startup_ms <= 0) gpu_rates.leave(a.order, gpus_of(a));
  };
  std::vector<std::vector<size_t>> by_gpu(static_cast<size_t>(std::max(1, options.gpus)));
  std::vector<int> used;  // the GPUs by_gpu holds jobs of
  std::vector<SoloLoad> loads;
  std::multiset<int64_t> timers;  // probe ends and verdicts: the scheduler looks again then
  int64_t now = 0;
  std::optional<int64_t> first_start;
  int64_t last_end = 0;
  auto fail = [&](size_t job, const std::string& why) {
    ++result.jobs_failed;
    if (result.failures.size() < kKeepLines) result.failures.push_back(jobs[job].name + ": " + why);
  };
  auto note = [&](const std::string& line) {
    if (result.notes.size() < kKeepLines)
      result.notes.push_back(fmt::format("{:>8}  {}", format_duration_ms(now), line));
  };

  // A protected job alone past its start-up (by_gpu: this step's) measures
  // its solo rate (its first steady epoch alone, as the engine does; the
  // rate observe_rate() reports for it). Whether one did.
  auto teach_solo = [&](int64_t at) {
    bool taught = false;
    for (const Active& a : active) {
      const SimJob& job = jobs[a.job];
      if (job.qos != QosClass::kProtected || a.startup_ms > 0 || a.gpus.size() != 1 ||
          by_gpu[static_cast<size_t>(a.gpus.front())].size() != 1 ||
          !solo_taught.insert(job.signature).second)
        continue;
      JobProfile alone;
      alone.samples_per_s = job.truth.samples_per_s.value_or(1000.0);
      alone.source = "its first steady epoch alone (simulated)";
      scheduler->learned(job.signature, alone, at);
      taught = true;
    }
    return taught;
  };
  auto floor_loop = [&](int64_t at) {
    for (Active& p : active) {
      const SimJob& pj = jobs[p.job];
      if (pj.qos != QosClass::kProtected || p.startup_ms > 0) continue;
      if (p.rate + 1e-9 >= pj.min_speed) {
        p.below_since_ms = -1;
        continue;
      }
      if (p.below_since_ms < 0) {
        p.below_since_ms = at;
        timers.insert(at + kFloorWindowMs);
        continue;
      }
      if (at - p.below_since_ms < kFloorWindowMs) continue;
      auto newest = active.end();
      for (auto o = active.begin(); o != active.end(); ++o) {
        const bool shares = std::any_of(o->gpus.begin(), o->gpus.end(), [&](int g) {
          return std::find(p.gpus.begin(), p.gpus.end(), g) != p.gpus.end();
        });
        if (shares && jobs[o->job].qos == QosClass::kOpportunistic &&
            (newest == active.end() || o->started_ms > newest->started_ms))
          newest = o;
      }
      p.below_since_ms = -1;  // a whole new window before the next stop
      if (newest == active.end()) continue;
      const double speed = p.rate;
      const size_t protector = p.job;
      const Active stopped = *newest;
      leave(stopped);
      active.erase(newest);  // `p` is not used past here
      resumed_work[stopped.job] = stopped.remaining_ms;
      const EndVerdict v = scheduler->finished(stopped.job, JobEnd::kCancelled, at);
      scheduler->avoid_together({jobs[protector].signature, jobs[stopped.job].signature});
      if (!v.requeued) enqueue(stopped.job);
      ++result.floor_stops;
      ++floor_stops[protector];
      note(fmt::format(
          "{}: stopped for {}'s floor {:.2f}: it ran at {:.2f} beside this job; it "
          "runs again from its checkpoint (not counted)",
          jobs[stopped.job].name, jobs[protector].name, jobs[protector].min_speed, speed));
      return true;
    }
    return false;
  };

  while (true) {
    // One scheduling event: rates, decisions.
    std::vector<Decision> decisions;
    event_ms = timed([&] {
      if (is_auto) {
        for (const Active& a : active) {
          if (a.startup_ms > 0) continue;  // no progress to report yet
          double solo = jobs[a.job].truth.samples_per_s.value_or(1000.0);
          scheduler->observe_rate(a.job, a.rate * solo, now);
        }
      }
      arrive(now);
      decisions = scheduler->schedule(now);
    });
    result.scheduler_total_ms += event_ms;
    if (event_ms > result.scheduler_max_ms) {
      result.scheduler_max_ms = event_ms;
      result.max_event_decisions = decisions.size();
    }
    result.events_over_1ms += event_ms > 1.0 ? 1 : 0;
    ++result.events;
    for (const Unplaceable& u : scheduler->take_unplaceable()) fail(u.job, u.reason);
    for (const std::string& n : scheduler->take_notes()) note(n);

    for (const Decision& d : decisions) {
      const JobProfile& truth = jobs[d.job].truth;
      Active a;
      a.job = d.job;
      a.gpus = d.gang_devices.empty() ? std::vector<int>{d.device} : d.gang_devices;
      a.gpu = a.gpus.front();
      a.gang = a.gpus.size() > 1;
      a.order = started++;
      if (result.starts.size() < kKeepStarts) result.starts.push_back(jobs[d.job].name);
      const int64_t solo = truth.solo_ms.value_or(0);
      a.startup_ms = static_cast<double>(std::min(solo, truth.startup_ms.value_or(0)));
      a.remaining_ms = static_cast<double>(solo) - a.startup_ms;
      if (auto resumed = resumed_work.find(d.job); resumed != resumed_work.end()) {
        a.remaining_ms = resumed->second;
        resumed_work.erase(resumed);
      }
      a.probe = d.probe;
      a.opportunistic = d.opportunistic;
      a.thread_pct = d.opportunistic_thread_pct.value_or(100);
      a.started_ms = now;
      if (first_started[d.job] < 0) first_started[d.job] = now;
      a.peak_bytes = *truth.peak_memory_bytes;
      a.load = {truth.sm_active_pct.value_or(0), truth.gpu_busy_pct()};
      // Its memory beside the others', on the fullest of its GPUs.
      uint64_t on_gpu = 0;
      for (int g : gpus_of(a))
        on_gpu = std::max(on_gpu, a.peak_bytes + peak_on_gpu[static_cast<size_t>(g)]);
      bool over_limit = d.memory_limit_bytes && *truth.peak_memory_bytes > *d.memory_limit_bytes;
      if (over_limit || on_gpu > options.gpu_memory_bytes)
        a.fail_at_ms = a.remaining_ms * (1.0 - kOomFraction);
      if (d.probe) {
        a.measured_at_ms = now + std::min(options.probe_ms,
                                          static_cast<int64_t>(a.startup_ms) + options.measure_ms);
        // Its memory grows as it is measured (observe_memory() below): the
        // policy sees it at each quarter of its measurement.
        for (int q = 1; q <= 4; ++q) timers.insert(now + (a.measured_at_ms - now) * q / 4);
      }
      first_start = first_start.value_or(now);
      for (int g : gpus_of(a)) peak_on_gpu[static_cast<size_t>(g)] += a.peak_bytes;
      if (a.startup_ms <= 0) gpu_rates.join(a.order, gpus_of(a), a.load);
      active.push_back(a);
    }
    if (is_auto && !decisions.empty()) timers.insert(now + options.auto_options.settle_ms + 1);
    if (std::optional<int64_t> wake = scheduler->next_wakeup_ms(now);
        wake && !timers.contains(*wake))
      timers.insert(*wake);

    const bool more_arrive = arrived < jobs.size();
    if (active.empty() && !more_arrive) {
      if (scheduler->queued() == 0 && timers.empty()) break;
      if (timers.empty()) {  // nothing runs and nothing will: cannot happen with a sane policy
        for (size_t j : scheduler->drain_queued()) fail(j, "never placed (simulation stalled)");
        break;
      }
    }

    // Rates of the jobs on each GPU, from their true loads; a gang goes at
    // the pace of its slowest rank. Without protected jobs every job on a
    // GPU goes at its rate: gpu_rates computes again the GPUs whose jobs
    // changed, and the walk below gives each job its GPUs'. With them, a GPU
    // holding one has a rate for each job (qos_rates()): every GPU's jobs
    // are found here at each step.
    // (by_gpu, used and loads keep their memory from step to step: a
    // cluster's day has hundreds of thousands of steps.)
    gpu_rates.update();
    for (int g : used) by_gpu[static_cast<size_t>(g)].clear();
    used.clear();
    for (size_t i = 0; any_protected && i < active.size(); ++i) {
      active[i].rate = active[i].startup_ms > 0 ? 0 : 1.0;
      if (active[i].startup_ms > 0) continue;
      for (int g : active[i].gpus) {
        std::vector<size_t>& members = by_gpu[static_cast<size_t>(g)];
        if (members.empty()) used.push_back(g);
        members.push_back(i);
      }
    }
    for (int g : used) {
      const std::vector<size_t>& members = by_gpu[static_cast<size_t>(g)];
      if (any_protected && mode == ShareMode::kSpatial && qos_rates(jobs, active, members))
        continue;
      loads.clear();
      for (size_t i : members) loads.push_back(active[i].load);
      const double rate = options.model.rate_of_each(mode, loads);
      for (size_t i : members) active[i].rate = std::min(active[i].rate, rate);
    }
    // The closed loop (docs/policy.md): a protected job below its floor for
    // the window gets its newest opportunistic neighbour stopped, requeued
    // not counted (resuming its work), and the pair is not formed again.
    if (any_protected && (teach_solo(now) || floor_loop(now))) continue;

    // The next event: a job ends (done or out of memory), a timer fires or a
    // job is submitted.
    double next = more_arrive ? static_cast<double>(jobs[arrived].submit_ms)
                              : std::numeric_limits<double>::infinity();
    for (Active& a : active) {
      if (!any_protected) a.rate = a.startup_ms > 0 ? 0 : gpu_rates.rate_of(gpus_of(a));
      double stop = std::max(0.0, a.fail_at_ms);
      next =
          std::min(next, static_cast<double>(now) +
                             (a.startup_ms > 0 ? a.startup_ms : (a.remaining_ms - stop) / a.rate));
    }
    while (!timers.empty() && *timers.begin() <= now) timers.erase(timers.begin());
    if (!timers.empty()) next = std::min(next, static_cast<double>(*timers.begin()));
    if (!std::isfinite(next)) break;
    const int64_t then = std::max(now + 1, static_cast<int64_t>(std::ceil(next)));
    const auto dt = static_cast<double>(then - now);
    now = then;

    // Every job goes on by dt; those that end leave the list (in its order),
    // and are told in job order (deterministic).
    std::vector<Active> ended;
    size_t kept = 0;
    size_t probing = 0;  // of those that go on
    for (size_t i = 0; i < active.size(); ++i) {
      Active& a = active[i];
      if (a.startup_ms > 0) {
        a.startup_ms = std::max(0.0, a.startup_ms - dt);
        if (a.startup_ms <= 0) gpu_rates.join(a.order, gpus_of(a), a.load);
      } else {
        a.remaining_ms -= a.rate * dt;
      }
      bool done = a.startup_ms <= 0 && a.remaining_ms <= 1e-6;
      done =
          done || (a.startup_ms <= 0 && a.fail_at_ms >= 0 && a.remaining_ms <= a.fail_at_ms + 1e-6);
      if (done) {
        leave(a);
        ended.push_back(std::move(a));
        continue;
      }
      probing += a.probe ? 1 : 0;
      if (kept != i) active[kept] = std::move(a);
      ++kept;
    }
    active.resize(kept);
    std::sort(ended.begin(), ended.end(),
              [](const Active& x, const Active& y) { return x.job < y.job; });
    event_ms = timed([&] {
      for (size_t i = 0; probing > 0 && i < active.size(); ++i) {
        const Active& a = active[i];
        if (a.probe && now < a.measured_at_ms) {
          // A newcomer's memory so far: its peak, reached linearly by its measurement.
          const double part =
              static_cast<double>(now - a.started_ms) /
              static_cast<double>(std::max<int64_t>(1, a.measured_at_ms - a.started_ms));
          scheduler->observe_memory(
              a.job,
              static_cast<uint64_t>(part *
                                    static_cast<double>(*jobs[a.job].truth.peak_memory_bytes)),
              now);
        }
        if (a.probe && now >= a.measured_at_ms) {
          JobProfile measured = jobs[a.job].truth;
          measured.source = "probe (simulated)";
          scheduler->learned(jobs[a.job].signature, measured, now);
        }
      }
      for (const Active& a : ended) {
        const SimJob& job = jobs[a.job];
        const bool oom = a.fail_at_ms >= 0;
        if (a.probe && !oom) {
          JobProfile measured = job.truth;
          measured.source = "probe (simulated)";
          scheduler->learned(job.signature, measured, now);
        }
        if (!oom) {
          JobProfile seen;  // summed over its GPUs, as the caller of measured() sees a job
          seen.peak_memory_bytes = *job.truth.peak_memory_bytes * a.gpus.size();
          seen.source = "measured (simulated)";
          scheduler->measured(a.job, seen);
        }
        EndVerdict v = scheduler->finished(a.job, oom ? JobEnd::kOutOfMemory : JobEnd::kOk, now);
        last_end = now;
        if (!oom && job.qos == QosClass::kProtected) {
          const auto startup = static_cast<double>(
              std::min(job.truth.solo_ms.value_or(0), job.truth.startup_ms.value_or(0)));
          const double work = static_cast<double>(job.truth.solo_ms.value_or(0)) - startup;
          const double taken = static_cast<double>(now - a.started_ms) - startup;
          result.protected_speeds.push_back({job.name, job.min_speed,
                                             taken > 0 ? std::min(1.0, work / taken) : 1.0,
                                             floor_stops[a.job]});
        }
        if (!oom) {
          ++result.jobs_ok;
          completion_sum += static_cast<double>(now - job.submit_ms);
          wait_sum += static_cast<double>(first_started[a.job] - job.submit_ms);
        } else if (v.requeued) {
          ++result.retries;
          note(fmt::format("{}: {}", job.name, v.note));
        } else {
          fail(a.job, v.note.empty() ? "out of GPU memory" : v.note);
        }
      }
    });
    // Jobs the policy stops (a speculative start that cannot fit): they end now, requeued.
    for (const Unplaceable& stop : scheduler->take_stops()) {
      auto it = std::find_if(active.begin(), active.end(),
                             [&](const Active& a) { return a.job == stop.job; });
      if (it == active.end()) continue;
      leave(*it);
      active.erase(it);
      EndVerdict v = scheduler->finished(stop.job, JobEnd::kStopped, now);
      ++result.stopped;
      note(fmt::format("{}: {}", jobs[stop.job].name, v.requeued ? v.note : stop.reason));
      if (!v.requeued) fail(stop.job, stop.reason);
    }
    result.scheduler_total_ms += event_ms;
    result.scheduler_max_ms = std::max(result.scheduler_max_ms, event_ms);
    for (size_t i = 0; probing > 0 && i < active.size(); ++i)
      active[i].probe = active[i].probe && now < active[i].measured_at_ms;
  }
  result.makespan_ms = first_start ? last_end - *first_start : 0;
  if (result.jobs_ok > 0) {
    result.mean_completion_ms = completion_sum / result.jobs_ok;
    result.mean_wait_ms = wait_sum / result.jobs_ok;
  }
  if (options.keep_scheduler) options.keep_scheduler(std::move(scheduler));
  return result;
}

GpuPlan fewest_gpus(const std::vector<SimJob>& jobs, const PolicySpec& policy, SimOptions options,
                    int64_t deadline_ms, int max_gpus) {
  GpuPlan plan;
  auto meets = [&](int gpus) {
    options.gpus = gpus;
    PolicyResult r = simulate_policy(jobs, policy, options);
    const bool all_ok = r.jobs_failed == 0 && r.jobs_ok == static_cast<int>(jobs.size());
    plan.tried.push_back({gpus, r.makespan_ms, all_ok});
    return all_ok && r.makespan_ms <= deadline_ms;
  };
  int miss = 0;  // the most GPUs known to miss
  int hit = 0;   // the fewest known to meet
  for (int gpus = 1; hit == 0 && miss < max_gpus; gpus = std::min(2 * gpus, max_gpus)) {
    if (meets(gpus)) {
      hit = gpus;
    } else {
      miss = gpus;
    }
  }
  if (hit > 0) {
    while (hit - miss > 1) {
      const int mid = miss + (hit - miss) / 2;
      if (meets(mid)) {
        hit = mid;
      } else {
        miss = mid;
      }
    }
    plan.gpus = hit;
  }
  std::sort(plan.tried.begin(), plan.tried.end(),
            [](const GpuPlan::Try& a, const GpuPlan::Try& b) { return a.gpus < b.gpus; });
  return plan;
}

}  // namespace colo
