// `colo profiles [FILE]`: what the store learned about each job signature
// and each family of a sweep, the estimates the auto policy placed jobs by
// beside what those jobs then measured, the interference model refitted to
// the store, and, with a job file, what each of its jobs would be placed by.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "analysis/stored.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/paths.h"
#include "common/units.h"
#include "gpu/sim_backend.h"
#include "jobs/job_features.h"
#include "jobs/job_file.h"
#include "jobs/job_signature.h"
#include "jobs/job_spec_json.h"
#include "sched/family.h"
#include "sched/prior.h"
#include "store/run_store.h"

namespace colo {
namespace {

struct ProfilesFlags {
  std::string db;
  std::string file;  // empty: none
  std::string gpu;   // GPU model the file's jobs would run on; empty: any
  bool json = false;
};

// `colo profiles --json` (docs/cli.md).
nlohmann::json profiles_json(const std::vector<LearnedProfile>& profiles,
                             const std::vector<Collocation>& collocations,
                             const InterferenceModel& fitted) {
  auto nullable = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json out = {{"profiles", nlohmann::json::array()},
                        {"interference_model", fitted.describe()},
                        {"collocations", collocations.size()}};
  for (const LearnedProfile& p : profiles) {
    const JobProfile& j = p.profile;
    out["profiles"].push_back({{"signature", p.signature},
                               {"job", p.job_name},
                               {"group", p.group},
                               {"family", p.family},
                               {"params", params_to_json(p.params)},
                               {"gpu_name", p.gpu_name},
                               {"simulated", p.simulated},
                               {"jobs_measured", p.runs},
                               {"peak_memory_bytes", nullable(j.peak_memory_bytes)},
                               {"sm_active_pct", nullable(j.sm_active_pct)},
                               {"gpu_util_pct", nullable(j.gpu_util_pct)},
                               {"samples_per_s", nullable(j.samples_per_s)},
                               {"epoch_ms", nullable(j.epoch_ms)},
                               {"solo_ms", nullable(j.solo_ms)},
                               {"startup_ms", nullable(j.startup_ms)},
                               {"source", j.source}});
  }
  return out;
}

std::string percent(double v) { return fmt::format("{:.0f}", v); }

// "3.1 GiB +-5%": a value with its relative uncertainty, when it has one.
std::string with_uncertainty(const std::string& value, double uncertainty) {
  return uncertainty > 0 ? fmt::format("{} +-{:.0f}%", value, 100 * uncertainty) : value;
}

void print_table(const std::vector<LearnedProfile>& profiles) {
  auto opt = [](const auto& v, auto fmt_fn) { return v ? fmt_fn(*v) : std::string("-"); };
  std::cout << fmt::format("{:<16} {:<24} {:<22} {:>9} {:>5} {:>6} {:>10} {:>8} {:>8} {:>8}  {}\n",
                           "SIGNATURE", "JOB", "GPU", "PEAK MEM", "SM %", "UTIL %", "SAMPLES/S",
                           "EPOCH", "ALONE", "STARTUP", "SOURCE");
  for (const LearnedProfile& p : profiles) {
    const JobProfile& j = p.profile;
    std::cout << fmt::format(
        "{:<16} {:<24} {:<22} {:>9} {:>5} {:>6} {:>10} {:>8} {:>8} {:>8}  {}\n", p.signature,
        p.job_name.empty() ? "-" : p.job_name, p.gpu_name, opt(j.peak_memory_bytes, format_bytes),
        opt(j.sm_active_pct, percent), opt(j.gpu_util_pct, percent), opt(j.samples_per_s, percent),
        opt(j.epoch_ms, [](double v) { return format_duration_ms(static_cast<int64_t>(v)); }),
        opt(j.solo_ms, format_duration_ms), opt(j.startup_ms, format_duration_ms), j.source);
  }
}

// The estimates jobs were placed by, beside their measured peak memory.
void print_estimates(const std::vector<LearnedProfile>& profiles) {
  bool header = false;
  for (const LearnedProfile& p : profiles) {
    if (!p.estimate) continue;
    if (!header) {
      std::cout << "\nESTIMATES the auto policy placed jobs by (from their families), beside what "
                   "the jobs then measured\n";
      std::cout << fmt::format("{:<28} {:>5} {:>16} {:>11} {:>7} {:>11} {:>16}\n", "JOB", "RUN",
                               "EST. PEAK MEM", "MEASURED", "ERROR", "EST. SM %", "EST. SAMPLES/S");
      header = true;
    }
    const LearnedProfile::EstimateCheck& c = *p.estimate;
    const JobProfile& e = c.estimate;
    std::string error = "-";
    if (c.measured_peak_bytes && *c.measured_peak_bytes > 0 && e.peak_memory_bytes) {
      error = fmt::format("{:+.1f}%", 100.0 * (static_cast<double>(*e.peak_memory_bytes) /
                                                   static_cast<double>(*c.measured_peak_bytes) -
                                               1.0));
    }
    std::cout << fmt::format(
        "{:<28} {:>5} {:>16} {:>11} {:>7} {:>11} {:>16}\n", c.job_name, c.run_id,
        e.peak_memory_bytes
            ? with_uncertainty(format_bytes(*e.peak_memory_bytes), e.memory_uncertainty)
            : "-",
        c.measured_peak_bytes ? format_bytes(*c.measured_peak_bytes) : "-", error,
        e.sm_active_pct ? with_uncertainty(percent(*e.sm_active_pct), e.sm_uncertainty) : "-",
        e.samples_per_s ? with_uncertainty(percent(*e.samples_per_s), e.rate_uncertainty) : "-");
  }
}

// Per family measured on one GPU model: which parameters matter, and why.
void print_families(const std::vector<LearnedProfile>& profiles) {
  std::map<std::tuple<std::string, std::string, bool>, std::vector<const LearnedProfile*>> groups;
  for (const LearnedProfile& p : profiles) {
    if (!p.family.empty() && !p.params.empty())
      groups[{p.family, p.gpu_name, p.simulated}].push_back(&p);
  }
  bool header = false;
  for (const auto& [key, members] : groups) {
    if (!header) {
      std::cout << "\nFAMILIES: what the measured instances of a sweep say about each other\n";
      header = true;
    }
    std::vector<FamilyInstance> instances;
    std::set<std::string> params;
    for (const LearnedProfile* m : members) {
      instances.push_back({instance_label(m->job_name), m->params, m->profile});
      for (const auto& [name, value] : m->params) params.insert(name);
    }
    std::cout << fmt::format("{} on {}: {} measured instance{}\n", members.front()->group,
                             std::get<1>(key), members.size(), members.size() == 1 ? "" : "s");
    const std::vector<std::string> names(params.begin(), params.end());
    for (Quantity q : {Quantity::kMemory, Quantity::kSmActivity, Quantity::kRate}) {
      for (const ParamEffect& e : param_effects(instances, q, names, std::nullopt)) {
        std::cout << fmt::format("  {:<16} {:<12} {}, {}\n", e.param, to_string(q),
                                 e.matters ? "matters" : "neutral", e.reason);
      }
    }
  }
}

// What --policy auto would place each job of `file` by, before the run.
void print_file(const JobFile& file, const std::vector<LearnedProfile>& profiles,
                const std::string& gpu) {
  const bool simulated = std::all_of(profiles.begin(), profiles.end(),
                                     [](const LearnedProfile& p) { return p.simulated; });
  const ProfilesBySignature known = known_profiles(profiles, file.jobs, gpu, simulated);
  const std::map<std::string, std::vector<FamilyInstance>> families =
      family_instances(profiles, file.jobs, gpu, simulated);
  const ProfilesBySignature usable = usable_profiles(known, families, file.jobs);
  std::cout << fmt::format("\nJOBS OF {} on {}: what --policy auto would place each by\n",
                           file.path, gpu.empty() ? "any GPU" : gpu);
  std::cout << fmt::format("{:<32} {:>16} {:>9} {:>14}  {}\n", "JOB", "PEAK MEM", "SM %",
                           "SAMPLES/S", "FROM");
  // Newcomers start by a prior, and are measured where they run.
  Result<SimGpuModel> model = sim_gpu_model(gpu.empty() ? "H100" : gpu);
  const PriorModel priors(prior_samples(profiles, gpu, simulated),
                          model.ok() ? model->memory_total_bytes : 0);
  std::set<std::string> seen;
  std::set<std::string> measured;  // families with a newcomer listed
  for (const JobSpec& job : file.jobs) {
    const std::string signature = job_signature(job);
    if (!seen.insert(signature).second) continue;
    const std::string name = instance_label(job.name);
    auto it = usable.find(signature);
    const bool newcomer = it == usable.end();
    if (newcomer && !job.family.empty() && !measured.insert(job.family).second) {
      std::cout << fmt::format("{:<32} {:>16} {:>9} {:>14}  {}\n", name, "-", "-", "-",
                               "after its family's newcomer is measured");
      continue;
    }
    const JobProfile p = newcomer ? priors.prior(job_features(job.command)) : it->second;
    std::cout << fmt::format(
        "{:<32} {:>16} {:>9} {:>14}  {}\n", name,
        p.peak_memory_bytes
            ? with_uncertainty(format_bytes(*p.peak_memory_bytes), p.memory_uncertainty)
            : "-",
        p.sm_active_pct ? with_uncertainty(percent(*p.sm_active_pct), p.sm_uncertainty) : "-",
        p.samples_per_s ? with_uncertainty(percent(*p.samples_per_s), p.rate_uncertainty) : "-",
        newcomer ? "new, measured where it runs; " + p.source : p.source);
  }
}

int profiles_command(const ProfilesFlags& flags) {
  std::optional<JobFile> file;
  if (!flags.file.empty()) {
    Result<JobFile> loaded = load_job_file(flags.file);
    if (!loaded.ok()) {
      std::cerr << "colo: " << loaded.error().message() << "\n";
      return kExitBadInput;
    }
    file = std::move(*loaded);
  }
  std::string path = flags.db.empty() ? default_db_path() : flags.db;
  if (access(path.c_str(), F_OK) != 0) {
    std::cerr << fmt::format(
        "colo: no run store at {} yet: `colo run FILE` creates it (or pass --db PATH)\n", path);
    return kExitEnvironment;
  }
  Result<std::unique_ptr<RunStore>> store = RunStore::open(path);
  Result<std::vector<LearnedProfile>> profiles =
      store.ok() ? learn_profiles(**store) : Result<std::vector<LearnedProfile>>(store.error());
  if (!profiles.ok()) {
    std::cerr << "colo: " << profiles.error().message() << "\n";
    return kExitEnvironment;
  }
  if (flags.json) {
    Result<std::vector<Collocation>> collocations = measured_collocations(**store, *profiles);
    if (!collocations.ok()) {
      std::cerr << "colo: " << collocations.error().message() << "\n";
      return kExitEnvironment;
    }
    std::cout << profiles_json(*profiles, *collocations,
                               calibrate(InterferenceModel{}, *collocations))
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  if (profiles->empty()) {
    std::cout << "no profiles yet: they are learned from completed runs (colo run)\n";
  } else {
    print_table(*profiles);
    print_estimates(*profiles);
    print_families(*profiles);
  }
  if (file) print_file(*file, *profiles, flags.gpu);
  if (profiles->empty()) return kExitOk;

  // The interference model refitted to this store's collocations (what
  // --policy auto and colo simulate use), with the measurements behind it.
  Result<std::vector<Collocation>> collocations = measured_collocations(**store, *profiles);
  if (!collocations.ok()) {
    std::cerr << "colo: " << collocations.error().message() << "\n";
    return kExitEnvironment;
  }
  const InterferenceModel fitted = calibrate(InterferenceModel{}, *collocations);
  std::cout << "\ninterference model refitted to this store: " << fitted.describe() << "\n";
  if (collocations->empty()) {
    std::cout << "  no measured collocations (runs of two or more jobs on one GPU under mps or "
                 "naive, with a steady speed-up and profiles of their jobs alone): defaults kept\n";
  }
  for (const Collocation& c : *collocations) {
    double summed_sm = 0;
    for (const SoloLoad& load : c.jobs) summed_sm += load.sm_active_pct;
    std::cout << fmt::format(
        "  {}: {}, {:.0f}% summed solo SM activity: measured {:.2f}, refitted model {:.2f}, "
        "defaults {:.2f}\n",
        c.source, count_of(static_cast<int64_t>(c.jobs.size()), "job"), summed_sm, c.measured_total,
        fitted.total(c.mode, c.jobs), InterferenceModel{}.total(c.mode, c.jobs));
  }
  return kExitOk;
}

}  // namespace

void add_profiles_command(CLI::App& app, int& exit_code) {
  static ProfilesFlags flags;
  CLI::App* cmd = app.add_subcommand(
      "profiles",
      "List what the store learned about each job signature (peak memory, solo SM activity, "
      "utilization, rate, time per epoch, time alone) and each family of a sweep (which "
      "parameters change them), the estimates jobs were placed by beside what they measured, "
      "and the interference model refitted to the store's measured collocations; with a job "
      "file, what --policy auto would place each of its jobs by");
  cmd->add_option("file", flags.file, "job file whose jobs to show (see docs/job-file.md)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--db", flags.db, "run store; default " + default_db_path());
  cmd->add_option("--gpu-model", flags.gpu,
                  "with a job file: profiles measured on GPUs whose name contains this (e.g. "
                  "H100); default any");
  add_deprecated_alias(*cmd, "--gpu", "--gpu-model", flags.gpu);
  set_example(*cmd, "colo profiles examples/sweep.toml --gpu-model H100");
  cmd->add_flag("--json", flags.json,
                "the learned profiles as JSON (docs/cli.md); a job file's placements are not "
                "included");
  cmd->callback([&exit_code] { exit_code = profiles_command(flags); });
}

}  // namespace colo
