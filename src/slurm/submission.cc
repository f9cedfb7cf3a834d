#include "slurm/submission.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "common/paths.h"

namespace colo {

Result<Submission> write_submission(ShardPlan plan, const std::string& dir,
                                    const SbatchOptions& sbatch) {
  if (std::filesystem::exists(plan_path(dir)))
    return Error(
        fmt::format("{} already holds a submission (plan.json): choose another --dir", dir));
  Result<std::string> script = batch_script(plan, dir, sbatch);
  if (!script.ok()) return script.error();
  for (const std::string& d : {dir, dir + "/slurm", dir + "/shards"}) {
    if (Status s = make_dirs(d); !s.ok()) return s.error();
  }
  Submission out{dir, dir + "/shard.sbatch", std::move(plan)};
  {
    std::ofstream file(out.script_path);
    file << *script;
    if (!file) return Error("cannot write " + out.script_path);
  }
  if (Status s = write_plan(plan_path(dir), out.plan); !s.ok()) return s.error();
  return out;
}

Status submit_array(Submission& submission, const CommandRunner& run, Clock& clock) {
  Result<CommandOutput> out = run({"sbatch", "--parsable", submission.script_path});
  if (!out.ok() || out->exit_status != 0) {
    return Error("sbatch failed: " +
                 (out.ok() ? out->stderr_text + out->stdout_text : out.error().message()));
  }
  Result<std::string> id = parse_sbatch_output(out->stdout_text);
  if (!id.ok()) return id.error();
  submission.plan.array_job_id = *id;
  submission.plan.submitted_ms = clock.now_ms();
  return write_plan(plan_path(submission.dir), submission.plan);
}

}  // namespace colo
