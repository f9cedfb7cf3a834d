// Names looked up among the caller's own runs and submissions (declared in
// run_store.h): a name is a label anyone may give, so another user's never
// stands in for the caller's own.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "common/users.h"
#include "store/run_store.h"

namespace colo {
namespace {

constexpr int kOthersListed = 10;

std::string describe(const NamedTarget& t) {
  const std::string who = t.owner_name.empty() ? "an unknown user" : t.owner_name + "'s";
  if (t.kind == NamedTarget::Kind::kRun) return fmt::format("{} run {}", who, t.id);
  return t.run_id ? fmt::format("{} submission {}/{}", who, *t.run_id, t.id)
                  : fmt::format("{} submission {}", who, t.id);
}

}  // namespace

Result<std::optional<NamedTarget>> RunStore::find_named(const std::string& name, uid_t caller,
                                                        NameKinds kinds) {
  if (name.empty()) return std::optional<NamedTarget>();
  const bool runs = kinds != NameKinds::kSubmissions;
  const bool submissions = kinds != NameKinds::kRuns;
  // The caller's own (a run recorded before owners were kept counts as
  // anyone's), newest first: runs, then submissions. Then, to name them in
  // the refusal, others'.
  const std::string own_runs =
      "SELECT 0, id, NULL, owner_uid, owner_name FROM runs WHERE name = ?1 AND "
      "(owner_uid = ?2 OR owner_uid IS NULL) ORDER BY id DESC LIMIT 1";
  const std::string own_submissions =
      "SELECT 1, id, run_id, owner_uid, owner_name FROM service_submissions WHERE name = ?1 AND "
      "owner_uid = ?2 ORDER BY id DESC LIMIT 1";
  const std::string other_runs =
      "SELECT 0, id, NULL, owner_uid, owner_name FROM runs WHERE name = ?1 AND owner_uid != ?2";
  const std::string other_submissions =
      "SELECT 1, id, run_id, owner_uid, owner_name FROM service_submissions WHERE name = ?1 AND "
      "owner_uid != ?2";
  std::vector<std::string> queries;
  if (runs) queries.push_back(own_runs);
  if (submissions) queries.push_back(own_submissions);
  std::string others;
  if (runs) others = other_runs;
  if (submissions) others += (others.empty() ? "" : " UNION ALL ") + other_submissions;
  queries.push_back(
      fmt::format("SELECT * FROM ({}) ORDER BY 2 DESC LIMIT {}", others, kOthersListed + 1));

  std::vector<NamedTarget> found;
  for (size_t q = 0; q < queries.size(); ++q) {
    auto select = Statement::prepare(db_.get(), path_, queries[q]);
    if (!select.ok()) return select.error();
    select->bind(1, name).bind(2, static_cast<int64_t>(caller));
    Status read = select->for_each_row([&]() -> Status {
      NamedTarget t;
      t.kind = select->int64_at(0) == 0 ? NamedTarget::Kind::kRun : NamedTarget::Kind::kSubmission;
      t.id = select->int64_at(1);
      t.run_id = select->opt_int64_at(2);
      if (std::optional<int64_t> owner = select->opt_int64_at(3))
        t.owner_uid = static_cast<uid_t>(*owner);
      t.owner_name = select->text_at(4);
      found.push_back(std::move(t));
      return OkStatus();
    });
    if (!read.ok()) return read.error();
    if (!found.empty() && q + 1 < queries.size()) return std::optional<NamedTarget>(found.front());
  }
  if (found.empty()) return std::optional<NamedTarget>();
  std::vector<std::string> listed;
  for (size_t i = 0; i < found.size() && i < kOthersListed; ++i)
    listed.push_back(describe(found[i]));
  if (found.size() > kOthersListed) listed.push_back("more");
  return Error(fmt::format(
      "'{}' names no {} of yours ({}); {} {} that name: name another user's by its id{}", name,
      runs && submissions ? "run or submission" : (runs ? "run" : "submission"),
      user_name_of(caller), fmt::join(listed, ", "), found.size() == 1 ? "has" : "have",
      submissions ? " (RUN/SUBMISSION for a submission)" : ""));
}

}  // namespace colo
