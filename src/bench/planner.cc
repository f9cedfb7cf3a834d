#include "bench/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace colo {
namespace {

struct Defaults {
  const char* label;
  double samples_per_s;
  uint64_t memory_bytes;
};

// The tables of planner.h.
constexpr Defaults kDefaults[] = {
    {"resnet26/cifar10/b128", 15900, 1229 * kMiB},
    {"resnet50/imagenet64/b128", 7900, 2 * kGiB},
    {"efficientnetv2_s/imagenet64/b32", 750, 1536 * kMiB},
    {"resnet152/imagenet/b32", 810, 5 * kGiB},
    {"cait_xxs24_224/imagenet/b128", 1040, 11 * kGiB},
    {"dlrm/criteo/b2048", 335000, 0},  // memory from --memory-gib
};

const Defaults* find_defaults(const Workload& w) {
  const std::string label = w.label();
  for (const Defaults& d : kDefaults) {
    if (label == d.label) return &d;
  }
  return nullptr;
}

int starts_of(const BenchCase& c) { return c.serial ? static_cast<int>(c.jobs.size()) : 1; }

}  // namespace

std::optional<double> default_samples_per_s(const Workload& workload) {
  const Defaults* d = find_defaults(workload);
  return d ? std::optional<double>(d->samples_per_s) : std::nullopt;
}

uint64_t default_memory_bytes(const Workload& workload, double dlrm_memory_gib) {
  if (workload.model == "dlrm") {
    return static_cast<uint64_t>((dlrm_memory_gib + 1.5) * static_cast<double>(kGiB));
  }
  const Defaults* d = find_defaults(workload);
  return d ? d->memory_bytes : 2 * kGiB;
}

double estimate_case_seconds(const BenchCase& c, const Plan& plan, double startup_s) {
  if (c.status != "planned") return 0;
  double work = 0;
  for (const Workload& w : c.jobs) {
    auto it = plan.workloads.find(w.label());
    if (it == plan.workloads.end() || it->second.samples_per_s <= 0) continue;
    work += static_cast<double>(it->second.epoch_samples) / it->second.samples_per_s;
  }
  return startup_s * starts_of(c) + plan.epochs * work;
}

Result<Plan> make_plan(const std::vector<BenchCase>& cases, const PlanOptions& options) {
  if (options.epochs < 1) return Error("epochs must be at least 1");
  Plan plan;
  plan.epochs = options.epochs;
  double startup_total = 0;
  int job_runs = 0;  // jobs over all cases that run
  for (const BenchCase& c : cases) {
    for (const Workload& w : c.jobs) {
      if (plan.workloads.contains(w.label())) continue;
      WorkloadPlan wp;
      wp.workload = w;
      if (auto m = options.measured_samples_per_s.find(w.label());
          m != options.measured_samples_per_s.end() && m->second > 0) {
        wp.samples_per_s = m->second;
        wp.rate_source = "measured";
      } else if (std::optional<double> d = default_samples_per_s(w)) {
        wp.samples_per_s = *d;
        wp.rate_source = w.model == "dlrm" ? "default table (H100)" : "default table (H200)";
      } else {
        return Error(fmt::format("no throughput known for workload {}", w.label()));
      }
      plan.workloads.emplace(w.label(), std::move(wp));
    }
    if (c.status != "planned") continue;
    startup_total += options.startup_s * starts_of(c);
    job_runs += static_cast<int>(c.jobs.size());
  }

  // The solo epoch length every workload's epoch size aims at.
  double epoch_s = options.default_epoch_s;
  if (options.budget_ms && job_runs > 0) {
    const double budget_s = static_cast<double>(*options.budget_ms) / 1000.0;
    epoch_s = (budget_s - startup_total) / (options.epochs * job_runs);
    if (epoch_s < options.min_epoch_s) {
      const double least_s = startup_total + options.min_epoch_s * options.epochs * job_runs;
      return Error(fmt::format(
          "--budget {} is too small for these {} cases: solo epochs would take {}, less than "
          "the {} minimum that keeps start-up and epoch boundaries from distorting the figures; "
          "give --budget {} or more, or fewer cases with --cases, or fewer --epochs",
          format_duration_s(budget_s),
          std::count_if(cases.begin(), cases.end(),
                        [](const BenchCase& c) { return c.status == "planned"; }),
          format_duration_s(std::max(0.0, epoch_s)), format_duration_s(options.min_epoch_s),
          format_duration_s(std::ceil(least_s))));
    }
  }
  plan.solo_epoch_seconds = std::max(0.0, epoch_s);
  for (auto& [label, wp] : plan.workloads) {
    const int64_t batch = std::max(1, wp.workload.batch_size);
    const auto batches = static_cast<int64_t>(
        std::floor(plan.solo_epoch_seconds * wp.samples_per_s / static_cast<double>(batch)));
    wp.epoch_samples = std::max<int64_t>(options.min_batches, batches) * batch;
  }

  plan.case_seconds.reserve(cases.size());
  for (const BenchCase& c : cases) {
    plan.case_seconds.push_back(estimate_case_seconds(c, plan, options.startup_s));
    plan.total_seconds += plan.case_seconds.back();
  }
  if (options.budget_ms &&
      plan.total_seconds > static_cast<double>(*options.budget_ms) / 1000.0 + 1e-6) {
    return Error(fmt::format(
        "--budget {} is too small for these {} cases: start-up alone is estimated at {} and the "
        "shortest epochs ({} batches) bring the estimate to {}; give --budget {} or more, or "
        "fewer cases with --cases",
        format_duration_s(static_cast<double>(*options.budget_ms) / 1000.0),
        std::count_if(cases.begin(), cases.end(),
                      [](const BenchCase& c) { return c.status == "planned"; }),
        format_duration_s(startup_total), options.min_batches,
        format_duration_s(plan.total_seconds), format_duration_s(std::ceil(plan.total_seconds))));
  }
  return plan;
}

std::string format_plan(const std::string& suite, const std::vector<BenchCase>& cases,
                        const Plan& plan, std::optional<uint64_t> device_memory_bytes,
                        double dlrm_memory_gib) {
  std::string out = fmt::format("plan for {}: {} cases, {} epochs per job (the first is warm-up)\n",
                                suite, cases.size(), plan.epochs);
  out += "workloads (samples per epoch; estimated solo epoch ";
  out += format_duration_s(plan.solo_epoch_seconds) + "):\n";
  for (const auto& [label, wp] : plan.workloads) {
    out += fmt::format("  {:<34} {:>8} samples/epoch  at {:.0f} samples/s ({})\n", label,
                       wp.epoch_samples, wp.samples_per_s, wp.rate_source);
  }
  size_t width = 0;
  for (const BenchCase& c : cases) width = std::max(width, c.name.size());
  out += "cases (time is an estimate):\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    const BenchCase& c = cases[i];
    std::string when = c.status == "planned" ? "~" + format_duration_s(plan.case_seconds[i]) : "-";
    out += fmt::format("  {:>3}. {:<{}}  {:<8} {:>8}", i + 1, c.name, width, c.status, when);
    if (c.serial) out += "  (jobs one after another)";
    if (!c.reason.empty()) out += "  " + c.reason;
    if (c.status == "planned" && device_memory_bytes) {
      FitDecision fit = check_fit(c, *device_memory_bytes, {}, dlrm_memory_gib);
      if (!fit.fits) out += "  does not fit (by default estimates): " + fit.reason;
    }
    out += "\n";
  }
  out += fmt::format(
      "estimated total: {} (estimate: start-up plus the jobs' work added up, as if "
      "collocation gave no speed-up)\n",
      format_duration_s(plan.total_seconds));
  if (std::any_of(cases.begin(), cases.end(), [](const BenchCase& c) {
        return c.mechanism == "exclusive" && !c.serial && c.workload != "recsys";
      })) {
    out +=
        "exclusive runs at degree 1 only: exclusive at degree k would be k solo runs one after "
        "another, k times the degree-1 case\n";
  }
  out +=
      "cases whose jobs cannot fit in GPU memory together are decided when they come up "
      "(recorded as does_not_fit, not run)\n";
  return out;
}

FitDecision check_fit(const BenchCase& c, uint64_t device_memory_bytes,
                      const std::map<std::string, MemoryFigure>& measured, double dlrm_memory_gib) {
  FitDecision d;
  std::string parts;
  uint64_t largest = 0;
  // Jobs of one workload grouped: "7 x 11.0 GiB resnet..." reads better.
  std::vector<std::pair<std::string, int>> groups;
  for (const Workload& w : c.jobs) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == w.label(); });
    if (it == groups.end()) {
      groups.emplace_back(w.label(), 1);
    } else {
      ++it->second;
    }
  }
  for (const auto& [label, count] : groups) {
    const Workload* w = nullptr;
    for (const Workload& j : c.jobs) {
      if (j.label() == label) w = &j;
    }
    MemoryFigure figure{default_memory_bytes(*w, dlrm_memory_gib), "default estimate"};
    if (auto m = measured.find(label); m != measured.end()) figure = m->second;
    d.needed_bytes += figure.bytes * static_cast<uint64_t>(count);
    largest = std::max(largest, figure.bytes);
    parts += fmt::format("{}{} x {} for {} ({})", parts.empty() ? "" : " + ", count,
                         format_bytes(figure.bytes), label, figure.source);
  }
  if (c.serial || c.mechanism == "exclusive") d.needed_bytes = largest;
  d.fits = d.needed_bytes <= device_memory_bytes;
  if (!d.fits) {
    d.reason = fmt::format("needs {} ({}) but the GPU has {}", format_bytes(d.needed_bytes), parts,
                           format_bytes(device_memory_bytes));
  }
  return d;
}

}  // namespace colo
