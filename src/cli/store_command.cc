// Managing the store: `colo experiments` (what `colo report exp:N` takes),
// `colo rm RUN...` and `colo gc --older-than 30d`, which remove runs with
// their logs, and `colo backup FILE`, a consistent copy of a store in use.
#include <fmt/format.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/stored.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/paths.h"
#include "common/units.h"
#include "run/log_layout.h"
#include "serve/client.h"
#include "serve/protocol.h"
#include "store/store_backup.h"

namespace colo {
namespace {

// ---- colo experiments -----------------------------------------------------

struct ExperimentsFlags {
  std::string db;
  int limit = 30;
  bool json = false;
};

int experiments_command(const ExperimentsFlags& flags) {
  Result<std::unique_ptr<RunStore>> store = open_store_for_reading(flags.db);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  Result<std::vector<ExperimentRow>> experiments = (*store)->list_experiments(flags.limit);
  if (!experiments.ok()) {
    std::cerr << "colo: " << experiments.error().message() << "\n";
    return kExitEnvironment;
  }
  struct Counts {
    int cases = 0;
    int ran = 0;
  };
  std::vector<Counts> counts;
  for (const ExperimentRow& e : *experiments) {
    Counts c;
    if (Result<std::vector<CaseRow>> cases = (*store)->experiment_cases(e.id); cases.ok()) {
      c.cases = static_cast<int>(cases->size());
      for (const CaseRow& r : *cases) c.ran += r.run_id ? 1 : 0;
    }
    counts.push_back(c);
  }
  if (flags.json) {
    nlohmann::json out = {{"experiments", nlohmann::json::array()}};
    for (size_t i = 0; i < experiments->size(); ++i) {
      const ExperimentRow& e = (*experiments)[i];
      out["experiments"].push_back(
          {{"id", e.id},
           {"suite", e.suite},
           {"state", e.state},
           {"started_ms", e.started_ms},
           {"ended_ms", e.ended_ms ? nlohmann::json(*e.ended_ms) : nlohmann::json(nullptr)},
           {"simulated", e.simulated},
           {"backend", e.backend},
           {"gpu_name", e.gpu_name},
           {"cases", counts[i].cases},
           {"cases_run", counts[i].ran},
           {"command_line", e.command_line}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  if (experiments->empty()) {
    std::cout << "no experiments yet: `colo bench --suite NAME` records one\n";
    return kExitOk;
  }
  std::cout << fmt::format("{:>3}  {:<16}  {:<11}  {:<16}  {:>9}  {}\n", "ID", "STARTED", "STATE",
                           "SUITE", "CASES RUN", "GPU");
  for (size_t i = 0; i < experiments->size(); ++i) {
    const ExperimentRow& e = (*experiments)[i];
    std::cout << fmt::format("{:>3}  {:<16}  {:<11}  {:<16}  {:>9}  {}{}\n", e.id,
                             format_local_datetime(e.started_ms).substr(0, 16), e.state, e.suite,
                             fmt::format("{}/{}", counts[i].ran, counts[i].cases), e.gpu_name,
                             e.simulated ? " (simulated)" : "");
  }
  std::cout << "colo report exp:ID --out DIR writes one's report (several exp:ID: one report)\n";
  return kExitOk;
}

// ---- colo rm / colo gc ----------------------------------------------------

// Removes each run; one line per run on stdout, errors on stderr. Returns
// whether every removal succeeded.
bool remove_runs(RunStore& store, const std::vector<int64_t>& runs, bool dry_run) {
  bool all = true;
  for (int64_t id : runs) {
    if (dry_run) {
      std::cout << fmt::format("would remove run {}\n", id);
      continue;
    }
    Result<std::vector<std::string>> logs = store.remove_run(id);
    if (!logs.ok()) {
      std::cerr << "colo: " << logs.error().message() << "\n";
      all = false;
      continue;
    }
    remove_run_logs(id, *logs);
    std::cout << fmt::format("removed run {} and its {}\n", id,
                             count_of(static_cast<int64_t>(logs->size()), "job log"));
  }
  return all;
}

// The runs an experiment's cases ran.
std::vector<int64_t> runs_of(RunStore& store, int64_t experiment_id) {
  std::vector<int64_t> runs;
  if (Result<std::vector<CaseRow>> cases = store.experiment_cases(experiment_id); cases.ok()) {
    for (const CaseRow& c : *cases) {
      if (c.run_id) runs.push_back(*c.run_id);
    }
  }
  return runs;
}

Result<std::unique_ptr<RunStore>> open_store_for_removal(const std::string& db) {
  Result<std::unique_ptr<RunStore>> store = open_store_for_reading(db);
  if (store.ok() && !(*store)->read_only_reason().empty()) {
    return Error(fmt::format("{} can only be read ({}): nothing removed", (*store)->path(),
                             (*store)->read_only_reason()));
  }
  return store;
}

struct RmFlags {
  std::vector<std::string> targets;
  std::string db;
};

int rm_command(const RmFlags& flags) {
  std::vector<int64_t> runs;
  std::vector<int64_t> experiments;
  for (const std::string& t : flags.targets) {
    const bool experiment = t.rfind("exp:", 0) == 0;
    const std::string number = experiment ? t.substr(4) : t.rfind("run:", 0) == 0 ? t.substr(4) : t;
    char* end = nullptr;
    const long long id = std::strtoll(number.c_str(), &end, 10);
    if (number.empty() || *end != '\0' || id <= 0) {
      std::cerr << fmt::format(
          "colo: rm: '{}' is not a run (ID or run:ID) or an experiment (exp:ID); `colo runs` and "
          "`colo experiments` list them\n",
          t);
      return kExitBadInput;
    }
    (experiment ? experiments : runs).push_back(id);
  }
  Result<std::unique_ptr<RunStore>> store = open_store_for_removal(flags.db);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  bool ok = true;
  for (int64_t e : experiments) {
    std::vector<int64_t> its_runs = runs_of(**store, e);
    if (Status s = (*store)->remove_experiment(e); !s.ok()) {
      std::cerr << "colo: " << s.error().message() << "\n";
      ok = false;
      continue;
    }
    std::cout << fmt::format("removed experiment {}\n", e);
    ok = remove_runs(**store, its_runs, false) && ok;
  }
  ok = remove_runs(**store, runs, false) && ok;
  return ok ? kExitOk : kExitBadInput;
}

struct GcFlags {
  std::string older_than;
  std::string thin_after;
  std::string thin_to = "1m";
  std::string db;
  std::string socket;
  bool dry_run = false;
};

// The files (logs, progress, checkpoints, profiles) of a running colo
// serve's jobs that ended over `age_ms` ago, when the service answering on
// `socket` (or its usual sockets) keeps `db`: its run never ends, so `colo
// rm` and the removal of old runs never reach them. False after an error.
bool collect_service_jobs(const std::string& db, const std::string& socket, int64_t age_ms,
                          bool dry_run) {
  Result<ServiceClient> client =
      ServiceClient::find(socket.empty() ? service_socket_candidates() : std::vector{socket});
  if (!client.ok()) return true;  // no service here: its runs ended, and were collected above
  std::error_code ec;
  const std::string store = std::filesystem::canonical(db, ec).string();
  int64_t jobs = 0;
  int64_t files = 0;
  while (true) {
    Result<nlohmann::json> answer =
        client->call(protocol::gc_request(age_ms, ec ? db : store, dry_run));
    if (!answer.ok()) {
      if (answer.error().message().find("this colo serve keeps") != std::string::npos)
        return true;  // it serves another store
      std::cerr << "colo: gc: the service's jobs: " << answer.error().message() << "\n";
      return false;
    }
    jobs += answer->value("jobs", int64_t{0});
    files += answer->value("files", int64_t{0});
    for (const auto& p : answer->value("problems", nlohmann::json::array()))
      std::cerr << "colo: gc: " << p.get<std::string>() << "\n";
    if (!answer->value("more", false) || dry_run) break;
  }
  std::cout << fmt::format(
      "{} the files of {} of the running colo serve that ended more than {} "
      "ago{}\n",
      dry_run ? "would remove" : "removed", count_of(jobs, "job"), format_duration_ms(age_ms),
      dry_run ? "" : fmt::format(" ({})", count_of(files, "file")));
  return true;
}

// Thins the samples taken before `cutoff` of each ended run that has some, to
// one per GPU (and process) every `every_ms`, after keeping what colo show,
// profiles and calibration read of the run instead. One line per run.
bool thin_runs(RunStore& store, const std::vector<RunRow>& runs, UnixMillis cutoff,
               int64_t every_ms, bool dry_run) {
  const UnixMillis until = cutoff - cutoff % every_ms;
  bool ok = true;
  for (const RunRow& r : runs) {
    if (r.state == RunState::kRunning || r.started_ms >= until) continue;
    if (dry_run) {
      std::cout << fmt::format("would thin run {}'s samples to one every {}\n", r.id,
                               format_duration_ms(every_ms));
      continue;
    }
    if (Status kept = keep_run_derivations(store, r.id); !kept.ok()) {
      std::cerr << fmt::format("colo: run {} not thinned: {}\n", r.id, kept.error().message());
      ok = false;
      continue;
    }
    Result<int64_t> removed = store.thin_samples(r.id, 0, until, every_ms);
    if (!removed.ok()) {
      std::cerr << fmt::format("colo: run {} not thinned: {}\n", r.id, removed.error().message());
      ok = false;
    } else if (*removed > 0) {
      std::cout << fmt::format("thinned run {}: {} removed, one every {} left\n", r.id,
                               count_of(*removed, "sample"), format_duration_ms(every_ms));
    }
  }
  return ok;
}

int gc_command(const GcFlags& flags) {
  if (flags.older_than.empty() && flags.thin_after.empty()) {
    std::cerr << "colo: gc: say what to collect: --older-than AGE removes the runs that ended "
                 "longer ago, --thin-samples-after AGE thins the GPU samples older than that\n";
    return kExitBadInput;
  }
  std::optional<int64_t> age_ms = flags.older_than.empty()
                                      ? std::optional<int64_t>(std::numeric_limits<int64_t>::max())
                                      : duration_flag("--older-than", flags.older_than, 1);
  std::optional<int64_t> thin_after_ms =
      flags.thin_after.empty() ? std::optional<int64_t>()
                               : duration_flag("--thin-samples-after", flags.thin_after, 0);
  std::optional<int64_t> thin_to_ms = duration_flag("--thin-to", flags.thin_to, 1);
  if (!age_ms || (!flags.thin_after.empty() && !thin_after_ms) || !thin_to_ms) return kExitBadInput;
  Result<std::unique_ptr<RunStore>> store = open_store_for_removal(flags.db);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  SystemClock clock;
  const UnixMillis now = clock.now_ms();
  const UnixMillis cutoff = flags.older_than.empty() ? 0 : now - *age_ms;
  Result<std::vector<RunRow>> runs = (*store)->list_runs(std::numeric_limits<int>::max());
  Result<std::vector<ExperimentRow>> experiments =
      (*store)->list_experiments(std::numeric_limits<int>::max());
  if (!runs.ok() || !experiments.ok()) {
    std::cerr << "colo: " << (runs.ok() ? experiments.error() : runs.error()).message() << "\n";
    return kExitEnvironment;
  }
  bool ok = true;
  for (const ExperimentRow& e : *experiments) {
    if (e.state == "running" || e.ended_ms.value_or(e.started_ms) >= cutoff) continue;
    if (flags.dry_run) {
      std::cout << fmt::format("would remove experiment {} ({})\n", e.id, e.suite);
    } else if (Status s = (*store)->remove_experiment(e.id); !s.ok()) {
      std::cerr << "colo: " << s.error().message() << "\n";
      ok = false;
    } else {
      std::cout << fmt::format("removed experiment {} ({})\n", e.id, e.suite);
    }
  }
  std::vector<int64_t> old;
  for (const RunRow& r : *runs) {
    if (r.state != RunState::kRunning && r.ended_ms.value_or(r.started_ms) < cutoff)
      old.push_back(r.id);
  }
  ok = remove_runs(**store, old, flags.dry_run) && ok;
  if (old.empty() && !flags.older_than.empty()) {
    std::cout << fmt::format("no run ended more than {} ago\n", format_duration_ms(*age_ms));
  }
  if (!flags.older_than.empty()) {
    ok = collect_service_jobs((*store)->path(), flags.socket, *age_ms, flags.dry_run) && ok;
  }
  if (thin_after_ms) {
    std::vector<RunRow> kept;
    for (const RunRow& r : *runs) {
      if (std::find(old.begin(), old.end(), r.id) == old.end()) kept.push_back(r);
    }
    ok = thin_runs(**store, kept, now - *thin_after_ms, *thin_to_ms, flags.dry_run) && ok;
  }
  return ok ? kExitOk : kExitEnvironment;
}

// ---- colo backup ----------------------------------------------------------

struct BackupFlags {
  std::string file;
  std::string db;
  bool force = false;
  bool check = false;
};

std::string copy_line(const StoreCopy& copy) {
  return fmt::format("{}, {}, {}, schema version {}",
                     format_bytes(static_cast<uint64_t>(copy.bytes)), count_of(copy.runs, "run"),
                     count_of(copy.jobs, "job"), copy.schema_version);
}

int backup_command(const BackupFlags& flags) {
  if (flags.check) {
    Result<StoreCopy> checked = check_store_copy(flags.file);
    if (!checked.ok()) {
      std::cerr << "colo: backup --check: " << checked.error().message() << "\n";
      return kExitEnvironment;
    }
    std::cout << fmt::format("{}: sound (every page read): {}\n", checked->path,
                             copy_line(*checked));
    return kExitOk;
  }
  const std::string db = flags.db.empty() ? default_db_path() : flags.db;
  Result<StoreCopy> copy =
      backup_store(db, flags.file, flags.force ? ExistingFile::kReplace : ExistingFile::kRefuse);
  if (!copy.ok()) {
    std::cerr << "colo: backup: " << copy.error().message() << "\n";
    struct stat st {};
    const bool no_store = ::lstat(db.c_str(), &st) != 0;
    if (no_store && flags.db.empty()) {
      std::cerr << "  (that is the default store; --db names another: the packaged service's is "
                   "/var/lib/colo/colo.db)\n";
    }
    // FILE exists and --force was not given: a command line to correct.
    const bool refused = !no_store && !flags.force && ::lstat(flags.file.c_str(), &st) == 0;
    return refused ? kExitBadInput : kExitEnvironment;
  }
  std::cout << fmt::format(
      "backed up {} to {}: {}\n  colo runs --db {} lists its runs; docs/serve.md says how to "
      "restore it\n",
      db, copy->path, copy_line(*copy), copy->path);
  return kExitOk;
}

}  // namespace

void add_store_commands(CLI::App& app, int& exit_code) {
  static ExperimentsFlags experiments;
  CLI::App* list = app.add_subcommand(
      "experiments", "List recorded experiments (colo bench), newest first: what exp:ID names");
  list->add_option("--db", experiments.db, "run store; default " + default_db_path());
  list->add_option("--limit,-n", experiments.limit, "how many experiments")
      ->check(whole_number(1))
      ->capture_default_str();
  list->add_flag("--json", experiments.json, "machine-readable output (docs/cli.md)");
  set_example(*list, "colo experiments --json");
  list->callback([&exit_code] { exit_code = experiments_command(experiments); });

  static RmFlags rm;
  CLI::App* rm_cmd =
      app.add_subcommand("rm", "Remove runs (and experiments) from the store, with their job logs");
  rm_cmd
      ->add_option("targets", rm.targets,
                   "run ID (or run:ID), or exp:ID: the experiment and its runs")
      ->required();
  rm_cmd->add_option("--db", rm.db, "run store; default " + default_db_path());
  set_example(*rm_cmd, "colo rm 12 13 exp:2");
  rm_cmd->callback([&exit_code] { exit_code = rm_command(rm); });

  static GcFlags gc;
  CLI::App* gc_cmd = app.add_subcommand(
      "gc",
      "Remove runs and experiments that ended longer ago than --older-than, with their logs; "
      "thin GPU samples older than --thin-samples-after");
  gc_cmd->add_option("--older-than", gc.older_than, "age, e.g. 30d, 12h");
  gc_cmd->add_option("--thin-samples-after", gc.thin_after,
                     "thin the GPU samples of ended runs older than this (e.g. 7d), keeping first "
                     "what colo show and the profiles read of them");
  gc_cmd->add_option("--thin-to", gc.thin_to, "one sample per GPU and process every this long")
      ->capture_default_str();
  gc_cmd->add_option("--db", gc.db, "run store; default " + default_db_path());
  gc_cmd->add_flag("--dry-run", gc.dry_run, "say what would be removed; remove nothing");
  gc_cmd->add_option("--socket", gc.socket,
                     "the colo serve that keeps this store (default: the usual sockets): the "
                     "files of its jobs that ended are removed too (admins only)");
  set_example(*gc_cmd, "colo gc --older-than 30d --thin-samples-after 7d --dry-run");
  gc_cmd->callback([&exit_code] { exit_code = gc_command(gc); });

  static BackupFlags backup;
  CLI::App* backup_cmd = app.add_subcommand(
      "backup",
      "Copy a store consistently while colo writes it (a running colo serve's included): one "
      "SQLite file, mode 0600");
  backup_cmd->add_option("file", backup.file, "the copy to write (a new file)")->required();
  CLI::Option* db_option =
      backup_cmd->add_option("--db", backup.db, "the store to copy; default " + default_db_path());
  CLI::Option* force_option =
      backup_cmd->add_flag("--force", backup.force, "replace FILE when it exists");
  backup_cmd
      ->add_flag("--check", backup.check,
                 "instead, read every page of the copy FILE (SQLite's integrity check) and say "
                 "what it holds")
      ->excludes(db_option)
      ->excludes(force_option);
  set_example(*backup_cmd, "colo backup --db /var/lib/colo/colo.db /root/colo-$(date +%F).db");
  backup_cmd->callback([&exit_code] { exit_code = backup_command(backup); });
}

}  // namespace colo
