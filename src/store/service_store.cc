// The service's queue half of RunStore (declared in run_store.h): jobs
// submitted to `colo serve` (schema version 6).
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>

#include "store/run_store.h"

namespace colo {
namespace {

// The columns read_service_job() reads: the job's, then its submission's run
// and name. `listing`: without the job's spec and environment (read as
// empty), for listings.
std::string service_job_columns(bool listing) {
  return fmt::format(
      "id, submitted_ms, owner_uid, owner_name, job_file, name, grp, {}, state, reason, attempts, "
      "job_id, device, started_ms, ended_ms, log_path, submission_id, resumed_by, uncounted, "
      "(SELECT u.run_id FROM service_submissions u WHERE u.id = service_jobs.submission_id), "
      "COALESCE((SELECT u.name FROM service_submissions u WHERE u.id = "
      "service_jobs.submission_id), '')",
      listing ? "'', ''"
              : "spec_json, COALESCE((SELECT e.env_json FROM service_envs e WHERE e.id = "
                "service_jobs.env_id), env_json)");
}

Result<ServiceJobRow> read_service_job(const Statement& s) {
  ServiceJobRow row;
  row.id = s.int64_at(0);
  row.submitted_ms = s.int64_at(1);
  row.owner_uid = static_cast<uid_t>(s.int64_at(2));
  row.owner_name = s.text_at(3);
  row.job_file = s.text_at(4);
  row.name = s.text_at(5);
  row.group = s.text_at(6);
  row.spec_json = s.text_at(7);
  row.env_json = s.text_at(8);
  Result<JobState> state = parse_job_state(s.text_at(9));
  if (!state.ok()) return state.error().with_context(fmt::format("service job #{}", row.id));
  row.state = *state;
  row.reason = s.text_at(10);
  row.attempts = static_cast<int>(s.int64_at(11));
  row.job_id = s.opt_int64_at(12);
  if (std::optional<int64_t> d = s.opt_int64_at(13)) row.device = static_cast<int>(*d);
  row.started_ms = s.opt_int64_at(14);
  row.ended_ms = s.opt_int64_at(15);
  row.log_path = s.text_at(16);
  row.submission_id = s.opt_int64_at(17);
  row.resumed_by = s.opt_int64_at(18);
  row.uncounted = static_cast<int>(s.int64_at(19));
  row.submission_run_id = s.opt_int64_at(20);
  row.submission_name = s.text_at(21);
  return row;
}

Result<std::vector<ServiceJobRow>> read_all(Statement& s) {
  std::vector<ServiceJobRow> rows;
  Status read = s.for_each_row([&]() -> Status {
    Result<ServiceJobRow> job = read_service_job(s);
    if (!job.ok()) return job.error();
    rows.push_back(std::move(job).value());
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return rows;
}

Status update_service_job(sqlite3* db, const std::string& path, Statement& s, int64_t id,
                          std::string_view what) {
  Status status = s.run();
  if (!status.ok()) return status.error().with_context(what);
  if (sqlite3_changes(db) != 1)
    return Error(fmt::format("{}: {}: there is no service job #{}", path, what, id));
  return OkStatus();
}

}  // namespace

Result<std::vector<int64_t>> RunStore::add_service_jobs(const std::vector<NewServiceJob>& jobs,
                                                        std::optional<int64_t> run_id,
                                                        const RunLabel& label,
                                                        std::optional<int64_t> resumes_submission) {
  sqlite3* db = db_.get();
  auto tx = Transaction::begin(db, path_);
  if (!tx.ok()) return tx.error();
  std::optional<int64_t> submission;
  if (!jobs.empty()) {
    auto insert_submission = Statement::prepare(db, path_, R"sql(
        INSERT INTO service_submissions (run_id, submitted_ms, owner_uid, owner_name, job_file,
                                         name, tags_json, note, resumes_submission)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?))sql");
    if (!insert_submission.ok()) return insert_submission.error();
    const NewServiceJob& first = jobs.front();
    Status s = insert_submission->bind(1, run_id)
                   .bind(2, first.submitted_ms)
                   .bind(3, static_cast<int64_t>(first.owner_uid))
                   .bind(4, first.owner_name)
                   .bind(5, first.job_file)
                   .bind(6, label.name)
                   .bind(7, tags_json(label.tags))
                   .bind(8, label.note)
                   .bind(9, resumes_submission)
                   .run();
    if (!s.ok()) return s.error().with_context("recording a submission");
    submission = sqlite3_last_insert_rowid(db);
  }
  auto insert = Statement::prepare(db, path_, R"sql(
      INSERT INTO service_jobs (submitted_ms, owner_uid, owner_name, job_file, name, grp,
                                spec_json, env_json, submit_key, state, env_id, submission_id)
      VALUES (?, ?, ?, ?, ?, ?, ?, '', ?, 'queued', ?, ?))sql");
  if (!insert.ok()) return insert.error();
  auto insert_env = Statement::prepare(db, path_, "INSERT INTO service_envs (env_json) VALUES (?)");
  if (!insert_env.ok()) return insert_env.error();
  // Each distinct environment once (a submission's jobs share theirs).
  std::map<std::string, int64_t> env_ids;
  std::vector<int64_t> ids;
  for (const NewServiceJob& j : jobs) {
    auto [env, added] = env_ids.try_emplace(j.env_json, 0);
    if (added) {
      if (Status s = insert_env->bind(1, j.env_json).run(); !s.ok())
        return s.error().with_context("queueing job " + j.name);
      env->second = sqlite3_last_insert_rowid(db);
    }
    Status s = insert->bind(1, j.submitted_ms)
                   .bind(2, static_cast<int64_t>(j.owner_uid))
                   .bind(3, j.owner_name)
                   .bind(4, j.job_file)
                   .bind(5, j.name)
                   .bind(6, j.group)
                   .bind(7, j.spec_json)
                   .bind(8, j.submit_key)
                   .bind(9, env->second)
                   .bind(10, submission)
                   .run();
    if (!s.ok()) return s.error().with_context("queueing job " + j.name);
    ids.push_back(sqlite3_last_insert_rowid(db));
  }
  if (Status s = tx->commit(); !s.ok()) return s.error();
  return ids;
}

namespace {

constexpr const char* kSubmissionColumns =
    "u.id, u.run_id, u.submitted_ms, u.owner_uid, u.owner_name, u.job_file, u.name, u.tags_json, "
    "u.note, (SELECT count(*) FROM service_jobs s WHERE s.submission_id = u.id), "
    "u.resumes_submission, (SELECT y.run_id FROM service_submissions y "
    "WHERE y.id = u.resumes_submission), "
    "(SELECT max(x.id) FROM service_submissions x WHERE x.resumes_submission = u.id), "
    "(SELECT x.run_id FROM service_submissions x WHERE x.resumes_submission = u.id "
    "ORDER BY x.id DESC LIMIT 1)";
// How many columns kSubmissionColumns selects: a query's own columns follow.
constexpr int kSubmissionColumnCount = 14;

// A lineage link of a submission: its id in column `id`, its run in `run`.
std::optional<SubmissionRef> submission_ref(const Statement& s, int id, int run) {
  std::optional<int64_t> sub = s.opt_int64_at(id);
  if (!sub) return std::nullopt;
  return SubmissionRef{s.opt_int64_at(run), *sub};
}

SubmissionRow read_submission(const Statement& s) {
  return SubmissionRow{s.int64_at(0),
                       s.opt_int64_at(1),
                       s.int64_at(2),
                       static_cast<uid_t>(s.int64_at(3)),
                       s.text_at(4),
                       s.text_at(5),
                       RunLabel{s.text_at(6), parse_tags_json(s.text_at(7)), s.text_at(8)},
                       s.int64_at(9),
                       submission_ref(s, 10, 11),
                       submission_ref(s, 12, 13)};
}

Result<std::vector<SubmissionRow>> read_submissions(Statement& s) {
  std::vector<SubmissionRow> rows;
  Status read = s.for_each_row([&]() -> Status {
    rows.push_back(read_submission(s));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return rows;
}

Result<std::optional<SubmissionRow>> first_of(Result<std::vector<SubmissionRow>> rows) {
  if (!rows.ok()) return rows.error();
  if (rows->empty()) return std::optional<SubmissionRow>();
  return std::optional<SubmissionRow>(std::move(rows->front()));
}

}  // namespace

Status RunStore::count_submission_jobs(SubmissionRow& sub) {
  auto s = Statement::prepare(db_.get(), path_, R"sql(
      SELECT state, started_ms IS NOT NULL, count(*) FROM service_jobs
      WHERE submission_id = ? GROUP BY 1, 2)sql");
  if (!s.ok()) return s.error();
  s->bind(1, sub.id);
  sub.outcomes = {};
  return s->for_each_row([&]() -> Status {
    Result<JobState> state = parse_job_state(s->text_at(0));
    if (!state.ok()) return state.error().with_context(fmt::format("submission {}", sub.id));
    sub.outcomes.add(*state, s->int64_at(1) != 0, s->int64_at(2));
    return OkStatus();
  });
}

Result<std::optional<SubmissionRow>> RunStore::submission(int64_t id) {
  auto s = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM service_submissions u WHERE u.id = ?", kSubmissionColumns));
  if (!s.ok()) return s.error();
  s->bind(1, id);
  Result<std::optional<SubmissionRow>> sub = first_of(read_submissions(*s));
  if (sub.ok() && sub->has_value()) {
    if (Status counted = count_submission_jobs(**sub); !counted.ok()) return counted.error();
  }
  return sub;
}

Result<std::vector<SubmissionRow>> RunStore::named_submissions_of(int64_t run_id, int limit) {
  auto s = Statement::prepare(db_.get(), path_,
                              fmt::format("SELECT {} FROM service_submissions u WHERE u.run_id = ? "
                                          "AND u.name != '' ORDER BY u.id DESC LIMIT ?",
                                          kSubmissionColumns));
  if (!s.ok()) return s.error();
  s->bind(1, run_id).bind(2, limit > 0 ? limit : -1);
  Result<std::vector<SubmissionRow>> subs = read_submissions(*s);
  if (!subs.ok()) return subs;
  for (SubmissionRow& sub : *subs) {
    if (Status counted = count_submission_jobs(sub); !counted.ok()) return counted.error();
  }
  return subs;
}

Result<std::vector<SubmissionJob>> RunStore::submission_jobs(int64_t submission_id) {
  // A service job's latest `jobs` row (service_jobs.job_id), with its run.
  auto s = Statement::prepare(db_.get(), path_, R"sql(
      SELECT j.id, j.run_id FROM service_jobs s JOIN jobs j ON j.id = s.job_id
      WHERE s.submission_id = ? ORDER BY j.id)sql");
  if (!s.ok()) return s.error();
  s->bind(1, submission_id);
  std::vector<SubmissionJob> jobs;
  Status read = s->for_each_row([&]() -> Status {
    jobs.push_back({s->int64_at(0), s->int64_at(1)});
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return jobs;
}

Result<std::map<int64_t, SubmissionRow>> RunStore::submissions_of_run_jobs(int64_t run_id) {
  auto s = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {}, j.id FROM jobs j JOIN service_jobs sj ON sj.id = j.service_job_id "
                  "JOIN service_submissions u ON u.id = sj.submission_id WHERE j.run_id = ?",
                  kSubmissionColumns));
  if (!s.ok()) return s.error();
  s->bind(1, run_id);
  std::map<int64_t, SubmissionRow> out;
  Status read = s->for_each_row([&]() -> Status {
    out.emplace(s->int64_at(kSubmissionColumnCount), read_submission(*s));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return out;
}

Result<std::map<int64_t, JobSubmitter>> RunStore::job_submitters(int64_t run_id) {
  auto s = Statement::prepare(db_.get(), path_, R"sql(
      SELECT j.id, s.owner_uid, s.owner_name, s.submission_id, COALESCE(u.name, '')
      FROM jobs j JOIN service_jobs s ON s.id = j.service_job_id
      LEFT JOIN service_submissions u ON u.id = s.submission_id
      WHERE j.run_id = ? ORDER BY j.id)sql");
  if (!s.ok()) return s.error();
  s->bind(1, run_id);
  std::map<int64_t, JobSubmitter> out;
  Status read = s->for_each_row([&]() -> Status {
    out[s->int64_at(0)] = JobSubmitter{static_cast<uid_t>(s->int64_at(1)), s->text_at(2),
                                       s->opt_int64_at(3), s->text_at(4)};
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return out;
}

Result<std::vector<int64_t>> RunStore::service_jobs_submitted_as(uid_t owner,
                                                                 const std::string& submit_key) {
  std::vector<int64_t> ids;
  if (submit_key.empty()) return ids;
  auto s = Statement::prepare(
      db_.get(), path_,
      // `submit_key != ''` lets SQLite use the partial index (schema.cc): a
      // bound parameter does not prove it, and without it each submit scanned
      // the whole table (75 ms at 10,000 queued).
      "SELECT id FROM service_jobs WHERE owner_uid = ? AND submit_key = ? AND submit_key != '' "
      "ORDER BY id");
  if (!s.ok()) return s.error();
  s->bind(1, static_cast<int64_t>(owner)).bind(2, submit_key);
  Status read = s->for_each_row([&]() -> Status {
    ids.push_back(s->int64_at(0));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return ids;
}

Result<std::vector<ServiceJobRow>> RunStore::unfinished_service_jobs() {
  auto s = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM service_jobs WHERE state IN ('queued', 'running') ORDER BY id",
                  service_job_columns(false)));
  if (!s.ok()) return s.error();
  return read_all(*s);
}

Result<std::vector<ServiceJobRow>> RunStore::running_service_jobs() {
  auto s = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM service_jobs WHERE state = 'running' ORDER BY id",
                  service_job_columns(true)));
  if (!s.ok()) return s.error();
  return read_all(*s);
}

Result<std::vector<ServiceJobRow>> RunStore::queued_service_jobs(int64_t offset, int64_t limit) {
  auto s = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM service_jobs WHERE state = 'queued' ORDER BY id LIMIT ? OFFSET ?",
                  service_job_columns(true)));
  if (!s.ok()) return s.error();
  s->bind(1, limit).bind(2, offset);
  return read_all(*s);
}

Result<std::map<std::string, ServiceJobCounts>> RunStore::unfinished_service_job_counts() {
  auto s = Statement::prepare(db_.get(), path_,
                              "SELECT owner_name, state, COUNT(*) FROM service_jobs "
                              "WHERE state IN ('queued', 'running') GROUP BY owner_name, state");
  if (!s.ok()) return s.error();
  std::map<std::string, ServiceJobCounts> counts;
  Status read = s->for_each_row([&]() -> Status {
    ServiceJobCounts& c = counts[s->text_at(0)];
    (s->text_at(1) == "running" ? c.running : c.queued) = s->int64_at(2);
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return counts;
}

Result<std::vector<ServiceUsageRow>> RunStore::service_usage() {
  auto s = Statement::prepare(
      db_.get(), path_,
      "SELECT owner_uid, owner_name, usage_ms, total_ms, at_ms FROM service_usage ORDER BY 1");
  if (!s.ok()) return s.error();
  std::vector<ServiceUsageRow> rows;
  Status read = s->for_each_row([&]() -> Status {
    rows.push_back({static_cast<uid_t>(s->int64_at(0)), s->text_at(1), s->double_at(2),
                    s->double_at(3), s->int64_at(4)});
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return rows;
}

Status RunStore::keep_service_usage(const std::vector<ServiceUsageRow>& rows) {
  Result<Transaction> tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error();
  auto s = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO service_usage (owner_uid, owner_name, usage_ms, total_ms, at_ms)
      VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (owner_uid) DO UPDATE SET owner_name = excluded.owner_name,
        usage_ms = excluded.usage_ms, total_ms = excluded.total_ms, at_ms = excluded.at_ms)sql");
  if (!s.ok()) return s.error();
  for (const ServiceUsageRow& r : rows) {
    s->bind(1, static_cast<int64_t>(r.owner_uid))
        .bind(2, r.owner_name)
        .bind(3, r.usage_ms)
        .bind(4, r.total_ms)
        .bind(5, r.at_ms);
    if (Status run = s->run(); !run.ok()) return run;
  }
  return tx->commit();
}

Status RunStore::add_service_job_usage(int64_t id, const ServiceJobUsage& usage) {
  auto update = Statement::prepare(
      db_.get(), path_,
      "UPDATE service_jobs SET gpu_ms = gpu_ms + ?2, solo_ms = solo_ms + ?3, share_ms = share_ms "
      "+ ?4, energy_j = energy_j + ?5, rated_gpu_ms = rated_gpu_ms + ?6, rated_share_ms = "
      "rated_share_ms + ?7 WHERE id = ?1");
  if (!update.ok()) return update.error();
  update->bind(1, id)
      .bind(2, usage.gpu_ms)
      .bind(3, usage.solo_ms)
      .bind(4, usage.share_ms)
      .bind(5, usage.energy_j)
      .bind(6, usage.rated_gpu_ms)
      .bind(7, usage.rated_share_ms);
  return update_service_job(db_.get(), path_, *update, id, "recording a job's usage");
}

Result<std::vector<ServiceUsageReport>> RunStore::service_usage_since(UnixMillis since_ms) {
  // Grouped by state and whether the job started; counted by the one rule
  // (jobs/job_outcome.h).
  auto s = Statement::prepare(db_.get(), path_, R"sql(
      SELECT owner_name, state, started_ms IS NOT NULL, count(*), sum(gpu_ms), sum(solo_ms),
             sum(share_ms), sum(energy_j), sum(rated_gpu_ms), sum(rated_share_ms)
      FROM service_jobs WHERE state NOT IN ('queued', 'running') AND ended_ms >= ?
      GROUP BY 1, 2, 3 ORDER BY 1)sql");
  if (!s.ok()) return s.error();
  s->bind(1, since_ms);
  std::vector<ServiceUsageReport> out;
  Status read = s->for_each_row([&]() -> Status {
    Result<JobState> state = parse_job_state(s->text_at(1));
    if (!state.ok()) return state.error().with_context("service jobs");
    const JobOutcome outcome = job_outcome(*state, s->int64_at(2) != 0);
    if (outcome == JobOutcome::kCancelledBeforeStart || outcome == JobOutcome::kUnfinished)
      return OkStatus();
    if (out.empty() || out.back().owner_name != s->text_at(0))
      out.push_back(ServiceUsageReport{s->text_at(0)});
    ServiceUsageReport& r = out.back();
    JobCounts counts;
    counts.add(outcome, s->int64_at(3));
    r.jobs += counts.ended_work();
    r.failed += counts.failed;
    r.cancelled += counts.cancelled;
    r.gpu_ms += s->double_at(4);
    r.solo_ms += s->double_at(5);
    r.share_ms += s->double_at(6);
    r.energy_j += s->double_at(7);
    r.rated_gpu_ms += s->double_at(8);
    r.rated_share_ms += s->double_at(9);
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  return out;
}

Result<std::vector<ServiceJobRow>> RunStore::service_jobs_by_id(const std::vector<int64_t>& ids) {
  auto s = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM service_jobs WHERE id = ?", service_job_columns(false)));
  if (!s.ok()) return s.error();
  std::vector<int64_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<ServiceJobRow> out;
  for (int64_t id : sorted) {
    s->bind(1, id);
    Result<std::vector<ServiceJobRow>> rows = read_all(*s);
    s->reset();
    if (!rows.ok()) return rows.error();
    for (ServiceJobRow& r : *rows) out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<ServiceJobRow>> RunStore::service_jobs_of_submission(int64_t submission_id) {
  auto s = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM service_jobs WHERE submission_id = ? ORDER BY id",
                  service_job_columns(false)));
  if (!s.ok()) return s.error();
  s->bind(1, submission_id);
  return read_all(*s);
}

Status RunStore::set_service_job_resumed_by(int64_t id, int64_t by) {
  auto update =
      Statement::prepare(db_.get(), path_, "UPDATE service_jobs SET resumed_by = ?2 WHERE id = ?1");
  if (!update.ok()) return update.error();
  update->bind(1, id).bind(2, by);
  return update_service_job(db_.get(), path_, *update, id, "recording that it was resumed");
}

Result<std::vector<ServiceJobRow>> RunStore::ended_service_jobs(int limit) {
  auto s = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM service_jobs WHERE state NOT IN ('queued', 'running') "
                  "ORDER BY id DESC LIMIT ?",
                  service_job_columns(true)));
  if (!s.ok()) return s.error();
  s->bind(1, limit);
  return read_all(*s);
}

Result<std::vector<ServiceJobRow>> RunStore::ended_service_jobs_with_files(UnixMillis from_ms,
                                                                           UnixMillis before_ms,
                                                                           int limit) {
  auto s = Statement::prepare(
      db_.get(), path_,
      fmt::format("SELECT {} FROM service_jobs WHERE files_removed_ms IS NULL AND ended_ms IS NOT "
                  "NULL AND ended_ms >= ? AND ended_ms < ? AND state NOT IN ('queued', 'running') "
                  "ORDER BY ended_ms LIMIT ?",
                  service_job_columns(true)));
  if (!s.ok()) return s.error();
  s->bind(1, from_ms).bind(2, before_ms).bind(3, limit);
  return read_all(*s);
}

Status RunStore::service_jobs_files_removed(const std::vector<int64_t>& ids, UnixMillis at_ms) {
  auto tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error();
  auto update = Statement::prepare(db_.get(), path_,
                                   "UPDATE service_jobs SET files_removed_ms = ?2 WHERE id = ?1");
  if (!update.ok()) return update.error();
  for (int64_t id : ids) {
    if (Status s = update->bind(1, id).bind(2, at_ms).run(); !s.ok())
      return s.error().with_context("recording that a job's files were removed");
  }
  return tx->commit();
}

Status RunStore::service_job_started(int64_t id, int64_t job_id, int device, UnixMillis started_ms,
                                     const std::string& log_path) {
  sqlite3* db = db_.get();
  auto tx = Transaction::begin(db, path_);
  if (!tx.ok()) return tx.error();
  auto update = Statement::prepare(db, path_, R"sql(
      UPDATE service_jobs SET state = 'running', attempts = attempts + 1, job_id = ?2,
                              device = ?3, started_ms = ?4, ended_ms = NULL, log_path = ?5
      WHERE id = ?1)sql");
  if (!update.ok()) return update.error();
  update->bind(1, id).bind(2, job_id).bind(3, device).bind(4, started_ms).bind(5, log_path);
  if (Status s = update_service_job(db, path_, *update, id, "recording the start of a job");
      !s.ok())
    return s;
  auto link = Statement::prepare(db, path_, "UPDATE jobs SET service_job_id = ?2 WHERE id = ?1");
  if (!link.ok()) return link.error();
  if (Status s = link->bind(1, job_id).bind(2, id).run(); !s.ok()) return s;
  return tx->commit();
}

Status RunStore::service_job_requeued(int64_t id, const std::string& reason, bool counted) {
  auto update = Statement::prepare(db_.get(), path_,
                                   "UPDATE service_jobs SET state = 'queued', reason = ?2, "
                                   "device = NULL, uncounted = uncounted + ?3 WHERE id = ?1");
  if (!update.ok()) return update.error();
  update->bind(1, id).bind(2, reason).bind(3, counted ? 0 : 1);
  return update_service_job(db_.get(), path_, *update, id, "requeueing a job");
}

Status RunStore::service_job_ended(int64_t id, JobState state, const std::string& reason,
                                   UnixMillis ended_ms) {
  if (!is_final(state)) {
    return Error(fmt::format("service job #{} cannot end in state '{}' (a bug in colo)", id,
                             to_string(state)));
  }
  auto update = Statement::prepare(
      db_.get(), path_,
      "UPDATE service_jobs SET state = ?2, reason = ?3, ended_ms = ?4 WHERE id = ?1");
  if (!update.ok()) return update.error();
  update->bind(1, id).bind(2, to_string(state)).bind(3, reason).bind(4, ended_ms);
  return update_service_job(db_.get(), path_, *update, id, "recording the end of a job");
}

}  // namespace colo
