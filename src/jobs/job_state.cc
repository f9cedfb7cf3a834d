#include "jobs/job_state.h"

#include "common/enum_names.h"

namespace colo {
namespace {

constexpr EnumNames<JobState, 9> kNames{"job state",
                                        {{
                                            {JobState::kQueued, "queued"},
                                            {JobState::kRunning, "running"},
                                            {JobState::kOk, "ok"},
                                            {JobState::kFailed, "failed"},
                                            {JobState::kOutOfMemory, "oom"},
                                            {JobState::kKilled, "killed"},
                                            {JobState::kCancelled, "cancelled"},
                                            {JobState::kInterrupted, "interrupted"},
                                            {JobState::kStopped, "stopped"},
                                        }}};

}  // namespace

std::string to_string(JobState state) { return kNames.name(state); }

Result<JobState> parse_job_state(std::string_view text) { return kNames.parse(text); }

bool is_final(JobState state) { return state != JobState::kQueued && state != JobState::kRunning; }

bool ended_well(JobState state) { return state == JobState::kOk || state == JobState::kStopped; }

bool ended_well(std::string_view state) { return state == "ok" || state == "stopped"; }

}  // namespace colo
