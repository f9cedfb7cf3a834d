#include "store/rows.h"

#include "common/enum_names.h"

namespace colo {
namespace {

constexpr EnumNames<RunState, 5> kRunStateNames{"run state",
                                                {{
                                                    {RunState::kRunning, "running"},
                                                    {RunState::kOk, "ok"},
                                                    {RunState::kFailed, "failed"},
                                                    {RunState::kCancelled, "cancelled"},
                                                    {RunState::kInterrupted, "interrupted"},
                                                }}};

}  // namespace

std::string to_string(RunState state) { return kRunStateNames.name(state); }

Result<RunState> parse_run_state(std::string_view text) { return kRunStateNames.parse(text); }

}  // namespace colo
