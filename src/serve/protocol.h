// The socket protocol of colo serve (docs/serve.md): one JSON object per line
// each way. A request names its operation in "op"; every answer carries
// "ok" (and "error" when false; and "permission_denied": true when the
// caller may not do what it asked, kPermissionDenied, also in a cancel's
// results, so that the client exits 5 for it). This header is the one place that spells
// the operations: the service answers them, and its clients (`colo submit`,
// `queue`, `cancel`, `logs`, `wait`, `colo top`) build their requests here.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace colo::protocol {

inline constexpr std::string_view kSubmit = "submit";  // jobs, job_file, env -> ids
inline constexpr std::string_view kQueue = "queue";    // -> snapshot
inline constexpr std::string_view kStatus = "status";  // ids -> jobs, recording
inline constexpr std::string_view kCancel = "cancel";  // ids -> cancelled, not_cancelled
inline constexpr std::string_view kLogs = "logs";      // id, offset, max_bytes -> data, offset
inline constexpr std::string_view kUsage = "usage";    // since_ms -> owners, ended
inline constexpr std::string_view kDrain = "drain";    // drain -> state, running
inline constexpr std::string_view kGc = "gc";          // older_than_ms -> jobs, files, more
inline constexpr std::string_view kOperations[] = {kSubmit, kQueue, kStatus, kCancel,
                                                   kLogs,   kUsage, kDrain,  kGc};

// `jobs`: each in jobs/job_spec_json's shape; `env`: the environment jobs
// start from; `submit_key`: the client's random token for this submission (a
// retry with the same key is answered with the jobs stored the first time).
// `label`: what the submitter called the submission ({"name", "tags": {...},
// "note"}, each optional; null: nothing; a tag whose value is "" is not
// kept). `resume`: instead of `jobs`, an earlier submission (its id, RUN/ID
// or name) whose jobs that did not end ok are queued again with their
// checkpoint directories ("" : none), its name and tags carried, which
// `label` changes (a tag whose value is "" removes the carried one).
inline nlohmann::json submit_request(const std::string& job_file, nlohmann::json jobs,
                                     const std::map<std::string, std::string>& env,
                                     const std::string& submit_key, nlohmann::json label = nullptr,
                                     const std::string& resume = "") {
  nlohmann::json request = {{"op", kSubmit},
                            {"job_file", job_file},
                            {"jobs", std::move(jobs)},
                            {"env", env},
                            {"submit_key", submit_key}};
  if (!label.is_null()) request["label"] = std::move(label);
  if (!resume.empty()) request["resume"] = resume;
  return request;
}
// `offset` and `limit` page the queued jobs (docs/serve.md): a snapshot
// holds kQueuedPage of them unless a reader asks for another page, at most
// kMaxQueuedPage, so that it costs the same whatever the queue's length.
// Set true in an answer (or a cancel's result) that refuses the caller permission.
inline constexpr const char* kPermissionDenied = "permission_denied";

inline constexpr int64_t kQueuedPage = 500;
inline constexpr int64_t kMaxQueuedPage = 5'000;
inline nlohmann::json queue_request() { return {{"op", kQueue}}; }
// `samples`: false leaves out the GPUs' recent samples (each GPU's latest
// stays), which are most of a snapshot's bytes on a machine of many GPUs.
inline nlohmann::json queue_request(int64_t offset, int64_t limit, bool samples = true) {
  return {{"op", kQueue}, {"offset", offset}, {"limit", limit}, {"samples", samples}};
}
// The same page as `colo queue`'s table (format_queue, at the service's
// clock), answered as {"ok":true,"table":TEXT}: the service keeps the first
// page's table until something changes, so a caller reads text, not a
// snapshot of hundreds of jobs to parse (issue 37).
inline nlohmann::json queue_table_request(int64_t offset, int64_t limit) {
  return {{"op", kQueue}, {"offset", offset}, {"limit", limit}, {"table", true}};
}
// The answer's `jobs` are as the store has them: a job reads ended once its
// end is written there, and with it everything it reported (the engine's
// writer writes in order). `recording`: the jobs that ended but whose end is
// still being written; `store_trouble`, with them while the store cannot be
// written (locked by another process, a full disk): why, in words.
inline nlohmann::json status_request(const std::vector<int64_t>& ids) {
  return {{"op", kStatus}, {"ids", ids}};
}
// `submissions`: RUN/SUB or a name of the caller's own (each: its jobs not
// yet ended); `mine`: every job of the caller's not yet ended. The answer's
// results: one per job ({"id", "ok", "error"}), and one per submission that
// names none ({"submission", "ok": false, "error"}).
inline nlohmann::json cancel_request(const std::vector<int64_t>& ids,
                                     const std::vector<std::string>& submissions = {},
                                     bool mine = false) {
  nlohmann::json r = {{"op", kCancel}, {"ids", ids}};
  if (!submissions.empty()) r["submissions"] = submissions;
  if (mine) r["mine"] = true;
  return r;
}
// `owners`: the snapshot's (each user's usage lately, weight, jobs); `ended`:
// per user, the jobs that ended since `since_ms` and their usage (the
// store's per-job figures summed: RunStore::service_usage_since).
inline nlohmann::json usage_request(int64_t since_ms) {
  return {{"op", kUsage}, {"since_ms", since_ms}};
}
// `drain`: true stops the service starting queued jobs (running ones run
// on; submissions still queue), false starts them again; admins only. The
// answer says the service's state and how many jobs run.
inline nlohmann::json drain_request(bool drain) { return {{"op", kDrain}, {"drain", drain}}; }
// `colo gc` of a running service's store (`store`: the path the caller
// means; the service refuses another): the files of its jobs that ended
// over `older_than_ms` ago (logs, progress, checkpoints, profiles); admins
// only. The answer counts `jobs` and `files` removed; `more`: jobs are left
// for the next request (each removes a bounded number).
inline nlohmann::json gc_request(int64_t older_than_ms, const std::string& store, bool dry_run) {
  return {{"op", kGc}, {"older_than_ms", older_than_ms}, {"store", store}, {"dry_run", dry_run}};
}
inline nlohmann::json logs_request(int64_t id, uint64_t offset) {
  return {{"op", kLogs}, {"id", id}, {"offset", offset}};
}

}  // namespace colo::protocol
