// Job signatures: the identity of a job's work, so that runs of "the same
// job" (the same command in the same place with the same environment) can be
// found again in the store and compared, whatever the job was called.
#pragma once

#include <string>
#include <vector>

#include "jobs/job_spec.h"

namespace colo {

// Stable identity of a job's work: FNV-1a 64 (16 hex digits) over its argv,
// working directory and environment (sorted by key). Name, hints and the
// mechanism do not enter, so the same command under any mechanism matches.
std::string job_signature(const JobSpec& job);
// job_signature() of each of `jobs`, in order: computed once for callers that
// each look every job up by it (colo simulate of a 10,000-point sweep).
std::vector<std::string> job_signatures(const std::vector<JobSpec>& jobs);

// Identity of a set of jobs: the hash of the sorted multiset of job signatures
// (order of the jobs in the file does not matter; repeats count).
std::string jobs_signature(std::vector<std::string> job_signatures);

}  // namespace colo
