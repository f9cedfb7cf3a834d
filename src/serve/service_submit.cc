// What a submission asks of colo serve (service.h: Service::submitted_specs
// and Service::resumable): the jobs a submit request sent, checked, and the
// jobs of an earlier submission that `colo submit --resume` runs again.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/names.h"
#include "common/target_syntax.h"
#include "common/text.h"
#include "common/units.h"
#include "jobs/job_spec_json.h"
#include "jobs/secret_env.h"
#include "run/data_loading.h"
#include "serve/service.h"

namespace colo {
namespace {

using nlohmann::json;

// Bounds a submission (docs/serve.md, "Limits").
constexpr size_t kMaxJobsPerSubmission = 10'000;

}  // namespace

Result<std::vector<JobSpec>> Service::submitted_specs(const Caller& caller,
                                                      const json& request) const {
  auto jobs = request.find("jobs");
  if (jobs == request.end() || !jobs->is_array() || jobs->empty())
    return Error("submit: 'jobs' must be a non-empty array of jobs");
  if (jobs->size() > kMaxJobsPerSubmission) {
    return Error(
        fmt::format("submit: {} jobs in one submission; at most {} are taken at "
                    "once: split the job file",
                    jobs->size(), kMaxJobsPerSubmission));
  }
  std::vector<JobSpec> specs;
  for (size_t i = 0; i < jobs->size(); ++i) {
    Result<JobSpec> spec = job_spec_from_json((*jobs)[i]);
    if (!spec.ok()) return Error(fmt::format("job #{}: {}", i + 1, spec.error().message()));
    if (spec->dataset && !spec->data_source) {
      return Error(fmt::format(
          "job '{}' reads dataset '{}', but its [data.{}] table did not come with it: submit "
          "its job file with colo submit, which sends the table",
          spec->name, *spec->dataset, *spec->dataset));
    }
    if (spec->data_source) {
      if (Result<LoaderOptions> o = loader_options_for(*spec->data_source); !o.ok())
        return Error(fmt::format("job '{}': {}", spec->name, o.error().message()));
    }
    if (spec->priority > 0 && !is_admin(caller) && caller.uid != geteuid()) {
      return Error(
          fmt::format("job '{}': priority {} is above 0, which only the service's admins may set "
                      "(root, the service's user or --admin-group); submit it with priority 0 or "
                      "below",
                      spec->name, spec->priority),
          ErrorKind::kPermissionDenied);
    }
    specs.push_back(std::move(spec).value());
  }
  return specs;
}

Result<Service::Resumption> Service::resumable(const Caller& caller, const std::string& which) {
  // A submission's id, RUN/ID as colo submit prints it, or its name
  // (common/target_syntax.h).
  Result<Target> read = parse_target(which, TargetForms{.id = true,
                                                        .submission = true,
                                                        .name = true,
                                                        .id_noun = "submission id",
                                                        .command = "colo submit --resume"});
  if (!read.ok()) return read.error();
  // A name is looked up among the caller's own submissions: another user's
  // (an admin resuming it for them) only by its id.
  std::optional<int64_t> id;
  if (read->kind == Target::Kind::kId) {
    id = read->first;
  } else if (read->kind == Target::Kind::kSubmission) {
    id = read->last;
  } else {
    Result<std::optional<NamedTarget>> named =
        ctx_.store.find_named(which, caller.uid, NameKinds::kSubmissions);
    if (!named.ok()) return named.error();
    if (*named) id = (*named)->id;
  }
  Result<std::optional<SubmissionRow>> sub =
      id ? ctx_.store.submission(*id) : Result<std::optional<SubmissionRow>>(std::nullopt);
  if (!sub.ok()) return sub.error();
  if (!*sub) {
    return Error(fmt::format(
        "'{}' is no submission of this service (give its RUN/ID, as colo submit printed it, or "
        "its name; `colo runs` lists the named ones)",
        which));
  }
  Result<std::vector<ServiceJobRow>> rows = ctx_.store.service_jobs_of_submission((*sub)->id);
  if (!rows.ok()) return rows.error();
  const std::string title =
      (*sub)->run_id ? fmt::format("{}/{}", *(*sub)->run_id, (*sub)->id) : which;
  Resumption r;
  r.of = title;
  r.owner_uid = (*sub)->owner_uid;
  r.owner_name = (*sub)->owner_name;
  r.job_file = (*sub)->job_file;
  r.submission_id = (*sub)->id;
  r.label.name = (*sub)->label.name;
  r.label.tags = (*sub)->label.tags;
  size_t open = 0;
  std::vector<int64_t> resumed;  // by the jobs of an earlier resumption
  for (const ServiceJobRow& row : *rows) {
    if (row.owner_uid != r.owner_uid) {
      return Error(fmt::format(
          "submission {} holds jobs of {} and of {} (a store colo did not write): it is not "
          "resumed",
          title, r.owner_name, row.owner_name));
    }
    if (row.owner_uid != caller.uid && !is_admin(caller)) {
      return Error(fmt::format("submission {} is {}'s: only they or the service's admins may "
                               "resume it",
                               title, row.owner_name),
                   ErrorKind::kPermissionDenied);
    }
    if (!is_final(row.state)) {
      ++open;
    } else if (ended_well(row.state)) {
      ++r.ended_well;
    } else if (row.resumed_by) {
      resumed.push_back(*row.resumed_by);
    } else {
      Result<JobSpec> spec = job_spec_from_json(json::parse(row.spec_json, nullptr, false));
      if (!spec.ok()) {
        return spec.error().with_context(
            fmt::format("job {} ({}): its recorded spec", row.id, row.name));
      }
      for (const auto& [name, value] : spec->env) {
        if (value == kRedactedValue) {
          return Error(fmt::format(
              "job {} ({}) had a secret value in its environment ({}), which the store does not "
              "keep: submit its job file again",
              row.id, row.name, name));
        }
      }
      r.specs.push_back(std::move(spec).value());
      r.from.push_back(row.id);
    }
  }
  if (open > 0) {
    return Error(
        fmt::format("submission {} has {} queued or running: resume it once they have "
                    "ended, or cancel them first (colo cancel)",
                    title, count_of(static_cast<int64_t>(open), "job")));
  }
  if (r.specs.empty() && !resumed.empty()) {
    return Error(
        fmt::format("the jobs of submission {} that did not end ok were resumed already, "
                    "as job{} {}: resume the submission of those instead",
                    title, resumed.size() == 1 ? "" : "s", fmt::join(resumed, ", ")));
  }
  if (r.specs.empty()) {
    return Error(
        fmt::format("submission {} has nothing to resume: its {} ended ok (or were "
                    "stopped early by their rule)",
                    title, count_of(static_cast<int64_t>(rows->size()), "job")));
  }
  return r;
}

}  // namespace colo
