#include "store/schema.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include "store/sqlite_util.h"

namespace colo {
namespace {

// Version 1: runs, jobs, job events, device and process samples.
constexpr const char* kMigration1 = R"sql(
CREATE TABLE runs (
  id             INTEGER PRIMARY KEY,
  started_ms     INTEGER NOT NULL,
  ended_ms       INTEGER,
  state          TEXT NOT NULL,
  mechanism      TEXT NOT NULL,
  backend        TEXT NOT NULL,
  simulated      INTEGER NOT NULL DEFAULT 0,
  job_file       TEXT NOT NULL DEFAULT '',
  jobs_signature TEXT NOT NULL DEFAULT '',
  host           TEXT NOT NULL DEFAULT '',
  colo_pid       INTEGER NOT NULL DEFAULT 0,
  command_line   TEXT NOT NULL DEFAULT '',
  devices_json   TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX runs_by_state ON runs(state);
CREATE INDEX runs_by_signature ON runs(jobs_signature, mechanism, state);

CREATE TABLE jobs (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  grp             TEXT NOT NULL DEFAULT '',
  spec_json       TEXT NOT NULL DEFAULT '{}',
  signature       TEXT NOT NULL DEFAULT '',
  state           TEXT NOT NULL,
  device          INTEGER,
  pid             INTEGER,
  queued_ms       INTEGER,
  started_ms      INTEGER,
  ended_ms        INTEGER,
  exit_code       INTEGER,
  signal          INTEGER,
  reason          TEXT NOT NULL DEFAULT '',
  log_path        TEXT NOT NULL DEFAULT '',
  malformed_lines INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_by_run ON jobs(run_id);

CREATE TABLE job_events (
  id           INTEGER PRIMARY KEY,
  job_id       INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  time_ms      INTEGER NOT NULL,
  kind         TEXT NOT NULL,
  epoch        INTEGER,
  step         INTEGER,
  samples      INTEGER,
  metrics_json TEXT
);
CREATE INDEX job_events_by_job_time ON job_events(job_id, time_ms);

CREATE TABLE device_samples (
  run_id             INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  time_ms            INTEGER NOT NULL,
  device             INTEGER NOT NULL,
  sm_active_pct      REAL,
  sm_occupancy_pct   REAL,
  tensor_active_pct  REAL,
  dram_active_pct    REAL,
  gpu_util_pct       REAL,
  memory_used_bytes  INTEGER,
  memory_total_bytes INTEGER,
  power_w            REAL,
  energy_mj          INTEGER,
  pcie_rx_mib_per_s  REAL,
  pcie_tx_mib_per_s  REAL,
  sm_clock_mhz       INTEGER
);
CREATE INDEX device_samples_by_run_time ON device_samples(run_id, device, time_ms);

CREATE TABLE process_samples (
  run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  time_ms           INTEGER NOT NULL,
  device            INTEGER NOT NULL,
  pid               INTEGER NOT NULL,
  job_id            INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
  used_memory_bytes INTEGER,
  sm_util_pct       REAL,
  mps_client        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX process_samples_by_run_time ON process_samples(run_id, time_ms);
CREATE INDEX process_samples_by_job_time ON process_samples(job_id, time_ms);
)sql";

// Version 2: experiments (`colo bench`) and their cases. An experiment records
// the colo that runs it (host, pid) so that one whose colo died can be marked
// interrupted; a run marked interrupted (RunStore::open) takes the experiment
// of the same colo with it through the trigger.
constexpr const char* kMigration2 = R"sql(
CREATE TABLE experiments (
  id           INTEGER PRIMARY KEY,
  suite        TEXT NOT NULL,
  started_ms   INTEGER NOT NULL,
  ended_ms     INTEGER,
  state        TEXT NOT NULL,
  options_json TEXT NOT NULL DEFAULT '{}',
  simulated    INTEGER NOT NULL DEFAULT 0,
  backend      TEXT NOT NULL DEFAULT '',
  gpu_name     TEXT NOT NULL DEFAULT '',
  command_line TEXT NOT NULL DEFAULT '',
  host         TEXT NOT NULL DEFAULT '',
  colo_pid     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX experiments_by_state ON experiments(state);

CREATE TABLE experiment_cases (
  id            INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  name          TEXT NOT NULL,
  workload      TEXT NOT NULL DEFAULT '',
  models        TEXT NOT NULL DEFAULT '',
  mechanism     TEXT NOT NULL DEFAULT '',
  degree        INTEGER NOT NULL DEFAULT 1,
  repetition    INTEGER NOT NULL DEFAULT 1,
  run_id        INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  status        TEXT NOT NULL DEFAULT 'planned',
  reason        TEXT NOT NULL DEFAULT '',
  UNIQUE (experiment_id, name)
);
CREATE INDEX experiment_cases_by_experiment ON experiment_cases(experiment_id, id);

CREATE TRIGGER experiments_interrupted_with_their_run
AFTER UPDATE OF state ON runs
WHEN NEW.state = 'interrupted' AND OLD.state = 'running'
BEGIN
  UPDATE experiment_cases SET status = 'cancelled',
         reason = 'colo stopped before the case ended (found at next start)'
   WHERE status = 'planned' AND experiment_id IN (
         SELECT id FROM experiments WHERE state = 'running' AND colo_pid = NEW.colo_pid
            AND host = NEW.host);
  UPDATE experiments SET state = 'interrupted', ended_ms = NEW.ended_ms
   WHERE state = 'running' AND colo_pid = NEW.colo_pid AND host = NEW.host;
END;
)sql";

// Version 3: the MIG instance each job ran on ("3g.40gb gi1 ci0 MIG-..."; ''
// under other mechanisms), for idle-instance time in reports.
constexpr const char* kMigration3 = R"sql(
ALTER TABLE jobs ADD COLUMN instance TEXT NOT NULL DEFAULT '';
)sql";

// Version 4: where a run ran inside Slurm ('' and 0 outside): its Slurm job
// ("1234", "1234_5" for element 5 of array job 1234), step ("batch", "0"),
// node, and how often Slurm had requeued the job (SLURM_RESTART_COUNT).
constexpr const char* kMigration4 = R"sql(
ALTER TABLE runs ADD COLUMN slurm_job_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN slurm_step TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN slurm_node TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN slurm_restart_count INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 5: the shared data loaders of a run ([data.NAME] tables) and the
// consumers each served: the loader's CPU time and memory, each consumer's
// time waiting for data (docs/data-sharing.md).
constexpr const char* kMigration5 = R"sql(
CREATE TABLE data_loaders (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  path            TEXT NOT NULL DEFAULT '',
  format          TEXT NOT NULL DEFAULT '',
  pid             INTEGER,
  threads         INTEGER,
  ring_bytes      INTEGER,
  dataset_size    INTEGER,
  wall_ms         INTEGER,
  cpu_ms          INTEGER,
  peak_rss_bytes  INTEGER,
  samples_decoded INTEGER,
  decode_errors   INTEGER,
  note            TEXT NOT NULL DEFAULT ''
);
CREATE INDEX data_loaders_by_run ON data_loaders(run_id);

CREATE TABLE data_consumers (
  loader_id    INTEGER NOT NULL REFERENCES data_loaders(id) ON DELETE CASCADE,
  job_id       INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
  job_name     TEXT NOT NULL DEFAULT '',
  pid          INTEGER,
  batch_size   INTEGER,
  duration_ms  INTEGER,
  samples      INTEGER,
  batches      INTEGER,
  epochs       INTEGER,
  wait_ms      INTEGER,
  pending_ms   INTEGER,
  held_back_ms INTEGER,
  detached     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX data_consumers_by_loader ON data_consumers(loader_id);
)sql";

// Version 6: what everything a job ran used on the host, from its cgroup
// (NULL where colo could not measure it): CPU time and peak memory.
constexpr const char* kMigration6 = R"sql(
ALTER TABLE jobs ADD COLUMN cpu_ms INTEGER;
ALTER TABLE jobs ADD COLUMN host_memory_peak_bytes INTEGER;
)sql";

// Version 7: the service's queue (`colo serve`), and every attempt at a job.
// A service job is what a user submitted and sees (`colo queue`, `colo
// cancel ID`); it outlives the service's restarts. Each service process that
// starts it makes a row of `jobs` in its run; service_jobs.job_id names the
// latest, jobs.service_job_id links each back. job_attempts has one row per
// start of a `jobs` row (a requeued job starts again: an out-of-memory retry,
// a mechanism failure); a service job's attempt numbers continue across its
// `jobs` rows.
constexpr const char* kMigration7 = R"sql(
CREATE TABLE service_jobs (
  id           INTEGER PRIMARY KEY,
  submitted_ms INTEGER NOT NULL,
  owner_uid    INTEGER NOT NULL,
  owner_name   TEXT NOT NULL,
  job_file     TEXT NOT NULL DEFAULT '',
  name         TEXT NOT NULL,
  grp          TEXT NOT NULL DEFAULT '',
  spec_json    TEXT NOT NULL,
  env_json     TEXT NOT NULL DEFAULT '{}',
  state        TEXT NOT NULL,
  reason       TEXT NOT NULL DEFAULT '',
  attempts     INTEGER NOT NULL DEFAULT 0,
  job_id       INTEGER REFERENCES jobs(id) ON DELETE SET NULL,
  device       INTEGER,
  started_ms   INTEGER,
  ended_ms     INTEGER,
  log_path     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX service_jobs_by_state ON service_jobs(state);
ALTER TABLE jobs ADD COLUMN service_job_id INTEGER;
CREATE INDEX jobs_by_service_job ON jobs(service_job_id);

CREATE TABLE job_attempts (
  job_id     INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt    INTEGER NOT NULL,
  device     INTEGER,
  pid        INTEGER,
  started_ms INTEGER NOT NULL,
  ended_ms   INTEGER,
  state      TEXT NOT NULL,
  reason     TEXT NOT NULL DEFAULT '',
  log_path   TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (job_id, attempt)
);
)sql";

// Version 8: a submission's key (the client's random token), so that a
// submit retried after a lost answer gets the jobs stored the first time.
constexpr const char* kMigration8 = R"sql(
ALTER TABLE service_jobs ADD COLUMN submit_key TEXT NOT NULL DEFAULT '';
CREATE INDEX service_jobs_by_submit_key ON service_jobs(owner_uid, submit_key)
  WHERE submit_key != '';
)sql";

// Version 9: a gang's GPUs ("0,1"; '' for a job on one GPU, which `device` names).
constexpr const char* kMigration9 = R"sql(
ALTER TABLE jobs ADD COLUMN gpus TEXT NOT NULL DEFAULT '';
)sql";

// Version 10: what the service reads every second without reading its
// queued jobs' rows (each holds its spec and environment, kilobytes): the
// newest ended jobs through a partial index (ORDER BY id DESC stopped at
// the first ended ones instead of stepping over every queued row), and the
// unfinished jobs counted per owner from a covering index.
constexpr const char* kMigration10 = R"sql(
CREATE INDEX service_jobs_ended ON service_jobs(id) WHERE state NOT IN ('queued', 'running');
CREATE INDEX service_jobs_by_state_owner ON service_jobs(state, owner_name);
)sql";

// Version 11: a submission's environment stored once (service_envs), not
// once per job: a sweep of 10,000 points copied its submitter's environment,
// kilobytes, into each row. Rows before it keep theirs in env_json.
constexpr const char* kMigration11 = R"sql(
CREATE TABLE service_envs (
  id       INTEGER PRIMARY KEY,
  env_json TEXT NOT NULL
);
ALTER TABLE service_jobs ADD COLUMN env_id INTEGER REFERENCES service_envs(id);
)sql";

// Version 12: what analyses derive from an ended run, kept so that a start,
// `colo show` or a report reads it instead of deriving it again from every
// job, event and sample (RunReader::derived). Keyed by what was derived
// (kind) and the version of the code that derived it.
constexpr const char* kMigration12 = R"sql(
CREATE TABLE run_derived (
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind    TEXT NOT NULL,
  version INTEGER NOT NULL,
  body    TEXT NOT NULL,
  PRIMARY KEY (run_id, kind)
);
)sql";

// Version 13: each user's fair-share usage in a service (solo-equivalent GPU
// time, decayed and in all, as of at_ms), so that a restart does not forget
// who used the GPUs.
constexpr const char* kMigration13 = R"sql(
CREATE TABLE service_usage (
  owner_uid  INTEGER PRIMARY KEY,
  owner_name TEXT NOT NULL,
  usage_ms   REAL NOT NULL,
  total_ms   REAL NOT NULL,
  at_ms      INTEGER NOT NULL
);
)sql";

// Version 14: each service job's usage, summed over its attempts as they
// end: GPU time (its time times its GPUs) and solo-equivalent GPU time (fair
// share's measure), read by `colo usage`.
constexpr const char* kMigration14 = R"sql(
ALTER TABLE service_jobs ADD COLUMN gpu_ms REAL NOT NULL DEFAULT 0;
ALTER TABLE service_jobs ADD COLUMN solo_ms REAL NOT NULL DEFAULT 0;
)sql";

// Version 15: what `colo usage` adds per job: the GPU time it held (each
// span times its share of each GPU: one over the jobs there), against which
// its solo-equivalent time is collocation's speed-up, and its share of its
// GPUs' energy.
constexpr const char* kMigration15 = R"sql(
ALTER TABLE service_jobs ADD COLUMN share_ms REAL NOT NULL DEFAULT 0;
ALTER TABLE service_jobs ADD COLUMN energy_j REAL NOT NULL DEFAULT 0;
)sql";

// Version 16: a run's name, tags and note (`colo run --name --tag --note`),
// so that a sweep can be found, compared and told apart by what it was for.
constexpr const char* kMigration16 = R"sql(
ALTER TABLE runs ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN tags_json TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_name ON runs(name) WHERE name != '';
)sql";

// Version 17: each submission to a service (`colo submit`), with what its
// submitter called it, so that a service's one run can be read submission
// by submission (`colo show NAME`, `colo show RUN/SUBMISSION`).
constexpr const char* kMigration17 = R"sql(
CREATE TABLE service_submissions (
  id           INTEGER PRIMARY KEY,
  run_id       INTEGER,
  submitted_ms INTEGER NOT NULL,
  owner_uid    INTEGER NOT NULL,
  owner_name   TEXT NOT NULL,
  job_file     TEXT NOT NULL DEFAULT '',
  name         TEXT NOT NULL DEFAULT '',
  tags_json    TEXT NOT NULL DEFAULT '{}',
  note         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX service_submissions_by_name ON service_submissions(name) WHERE name != '';
CREATE INDEX service_submissions_by_run ON service_submissions(run_id);
ALTER TABLE service_jobs ADD COLUMN submission_id INTEGER;
CREATE INDEX service_jobs_by_submission ON service_jobs(submission_id);
)sql";

// Version 18: the service job that resumed one (`colo submit --resume`), so
// that a job is resumed once, not once per command.
constexpr const char* kMigration18 = R"sql(
ALTER TABLE service_jobs ADD COLUMN resumed_by INTEGER;
)sql";

// Version 19: who recorded a run (its colo process's real uid and login), so
// that a name is looked up among the caller's own runs and submissions, never
// another user's (`colo show NAME`, `colo submit --resume NAME`). NULL in
// runs recorded before.
constexpr const char* kMigration19 = R"sql(
ALTER TABLE runs ADD COLUMN owner_uid INTEGER;
ALTER TABLE runs ADD COLUMN owner_name TEXT NOT NULL DEFAULT '';
CREATE INDEX service_submissions_by_owner_name ON service_submissions(owner_uid, name)
  WHERE name != '';
)sql";

// Version 20: a service job's attempts that ended through no fault of its own
// (the service's stop or crash, a drain, a neighbour's fault, a preemption),
// so that they never count against its attempts, across restarts too; and
// when `colo gc` removed its files (logs, progress, checkpoints), so that
// the next one does not look for them again.
constexpr const char* kMigration20 = R"sql(
ALTER TABLE service_jobs ADD COLUMN uncounted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE service_jobs ADD COLUMN files_removed_ms INTEGER;
CREATE INDEX service_jobs_ended_with_files ON service_jobs(ended_ms) WHERE files_removed_ms IS NULL
  AND ended_ms IS NOT NULL;
)sql";

// Version 21: lineage across resumes (`colo run --resume`, `colo submit
// --resume`): the run a run resumes and, by job, the job each of its jobs
// continues; the submission a submission resumes. `colo show` and `colo
// export` join the attempts into one history. NULL where nothing is resumed.
constexpr const char* kMigration21 = R"sql(
ALTER TABLE runs ADD COLUMN resumes_run INTEGER;
CREATE INDEX runs_by_resumes_run ON runs(resumes_run) WHERE resumes_run IS NOT NULL;
ALTER TABLE jobs ADD COLUMN resumes_job INTEGER;
ALTER TABLE service_submissions ADD COLUMN resumes_submission INTEGER;
CREATE INDEX service_submissions_by_resumes ON service_submissions(resumes_submission)
  WHERE resumes_submission IS NOT NULL;
CREATE INDEX service_jobs_by_resumed_by ON service_jobs(resumed_by) WHERE resumed_by IS NOT NULL;
)sql";

// Version 22: of a service job's usage, the GPU time and charged time of the
// spans whose solo rate was known (solo_ms counts those spans only), so that
// `colo usage` shows no solo-equivalent figure or speed-up where none was
// known. 0 in rows before: their figures are shown as unknown.
constexpr const char* kMigration22 = R"sql(
ALTER TABLE service_jobs ADD COLUMN rated_gpu_ms REAL NOT NULL DEFAULT 0;
ALTER TABLE service_jobs ADD COLUMN rated_share_ms REAL NOT NULL DEFAULT 0;
)sql";

Result<int> read_int_pragma(sqlite3* db, const std::string& path, const char* pragma) {
  auto stmt = Statement::prepare(db, path, fmt::format("PRAGMA {}", pragma));
  if (!stmt.ok()) return stmt.error();
  auto row = stmt->step();
  if (!row.ok()) return row.error();
  if (!*row) return Error(fmt::format("{}: PRAGMA {} returned nothing", path, pragma));
  return static_cast<int>(stmt->int64_at(0));
}

// True when the database already holds tables (of any program).
Result<bool> has_tables(sqlite3* db, const std::string& path) {
  auto stmt = Statement::prepare(
      db, path,
      "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
  if (!stmt.ok()) return stmt.error();
  auto row = stmt->step();
  if (!row.ok()) return row.error();
  return *row && stmt->int64_at(0) > 0;
}

}  // namespace

const std::vector<std::string>& schema_migrations() {
  static const std::vector<std::string> kMigrations = {
      kMigration1,  kMigration2,  kMigration3,  kMigration4,  kMigration5,  kMigration6,
      kMigration7,  kMigration8,  kMigration9,  kMigration10, kMigration11, kMigration12,
      kMigration13, kMigration14, kMigration15, kMigration16, kMigration17, kMigration18,
      kMigration19, kMigration20, kMigration21, kMigration22};
  return kMigrations;
}

int latest_schema_version() { return static_cast<int>(schema_migrations().size()); }

Result<int> read_schema_version(sqlite3* db, const std::string& path) {
  return read_int_pragma(db, path, "user_version");
}

Status migrate_schema(sqlite3* db, const std::string& path) {
  // Reading the header is the first access to the file: a file that is not a
  // SQLite database fails here with SQLITE_NOTADB. The version, the
  // application id and the tables are read in one read transaction: another
  // colo may be creating the schema meanwhile (seen apart, its tables
  // without its version once made a new store "not a colo database").
  if (Status s = exec_sql(db, path, "BEGIN", "cannot read the schema version"); !s.ok()) return s;
  Result<int> version = read_schema_version(db, path);
  Result<int> application_id = read_int_pragma(db, path, "application_id");
  Result<bool> tables = has_tables(db, path);
  (void)exec_sql(db, path, "COMMIT", "cannot end a read transaction");
  if (!version.ok()) return version.error();
  if (!application_id.ok()) return application_id.error();
  if (!tables.ok()) return tables.error();

  const int latest = latest_schema_version();
  if (*application_id != 0 && *application_id != kColoApplicationId) {
    return Error(fmt::format(
        "{} is not a colo database (it belongs to another program, application id {:#x}); "
        "pass --db to choose another path",
        path, static_cast<unsigned>(*application_id)));
  }
  if (*version == 0 && *application_id == 0) {
    if (*tables) {
      return Error(fmt::format(
          "{} is not a colo database (it is a SQLite database with other tables); pass --db to "
          "choose another path",
          path));
    }
  }
  if (*version < 0) {
    return Error(fmt::format(
        "{} has schema version {}, which no colo ever wrote (the file is damaged or was not "
        "written by colo); pass --db to use another store, or restore it from a copy",
        path, *version));
  }
  if (*version > latest) {
    return Error(fmt::format(
        "{} has schema version {}, newer than this colo knows (version {}); it was written by a "
        "newer colo: upgrade colo, or pass --db to use another store",
        path, *version, latest));
  }

  for (int v = *version; v < latest; ++v) {
    auto tx = Transaction::begin(db, path);
    if (!tx.ok())
      return tx.error().with_context(fmt::format("migrating to schema version {}", v + 1));
    // Another process may have migrated between our read and our lock.
    Result<int> current = read_schema_version(db, path);
    if (!current.ok()) return current.error();
    if (*current > v) {
      v = *current - 1;
      continue;  // the transaction rolls back (nothing was written)
    }
    Status status = exec_sql(db, path, schema_migrations()[static_cast<size_t>(v)],
                             fmt::format("cannot migrate to schema version {}", v + 1));
    if (!status.ok()) return status;
    status = exec_sql(db, path,
                      fmt::format("PRAGMA user_version = {}; PRAGMA application_id = {};", v + 1,
                                  kColoApplicationId),
                      "cannot record the schema version");
    if (!status.ok()) return status;
    status = tx->commit();
    if (!status.ok()) return status;
  }
  return OkStatus();
}

}  // namespace colo
