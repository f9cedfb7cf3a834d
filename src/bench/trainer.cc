#include "bench/trainer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

#include "common/paths.h"
#include "common/share_dir.h"

namespace colo {
namespace {

bool is_file(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

}  // namespace

Result<std::string> find_bench_dir() {
  if (std::optional<std::string> dir = find_share_dir("bench", "train.py", "COLO_BENCH_DIR")) {
    return *dir;
  }
  return Error(
      "cannot find colo's bench/ directory (train.py): run colo from the repository, set "
      "COLO_BENCH_DIR, or pass --trainer PATH");
}

Result<TrainerConfig> choose_trainer(const TrainerChoice& choice, const DeviceInfo& device,
                                     bool simulated) {
  TrainerConfig trainer;
  trainer.python = choice.python;
  std::string bench_dir;
  if (Result<std::string> dir = find_bench_dir(); dir.ok()) {
    bench_dir = *dir;
  } else if (choice.trainer.empty()) {
    return dir.error();
  }
  trainer.trainer = !choice.trainer.empty() ? absolute_path(choice.trainer)
                    : simulated             ? bench_dir + "/sim_train.py"
                                            : bench_dir + "/train.py";
  if (!is_file(trainer.trainer))
    return Error(fmt::format("--trainer: cannot read {}", trainer.trainer));
  trainer.sim_trainer = trainer.trainer.ends_with("/sim_train.py");
  trainer.dlrm = bench_dir.empty() ? "" : bench_dir + "/dlrm.py";
  trainer.working_dir = bench_dir.empty() ? absolute_path(".") : absolute_path(bench_dir + "/..");
  const double device_gib = static_cast<double>(device.memory_total_bytes) / (1ULL << 30);
  trainer.dlrm_memory_gib = choice.dlrm_memory_gib.value_or(
      std::floor(device_gib * choice.dlrm_share_pct / 100.0 * 2.0) / 2.0);
  if (choice.suite == "paper-recsys" && trainer.dlrm_memory_gib <= 0) {
    return Error(
        "the recommender's tables would be empty: raise --dlrm-share or pass --dlrm-memory-gib");
  }
  return trainer;
}

}  // namespace colo
