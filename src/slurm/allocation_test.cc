#include "slurm/allocation.h"

#include <gtest/gtest.h>

#include <map>

namespace colo {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

std::vector<DeviceInfo> gpus(int n) {
  std::vector<DeviceInfo> out;
  for (int i = 0; i < n; ++i) {
    DeviceInfo d;
    d.index = i;
    d.uuid = "GPU-" + std::string(1, static_cast<char>('a' + i)) + "000-1111";
    out.push_back(d);
  }
  return out;
}

std::string indices(const std::vector<DeviceInfo>& devices) {
  std::string out;
  for (const DeviceInfo& d : devices) {
    if (!out.empty()) out += ',';
    out += std::to_string(d.index);
  }
  return out;
}

TEST(SlurmAllocation, OutsideSlurmThereIsNone) {
  Result<std::optional<SlurmAllocation>> a = slurm_allocation(env_of({{"HOME", "/h"}}));
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
}

TEST(SlurmAllocation, SallocShellOnTheSubmitHostIsNotAnAllocation) {
  std::string note;
  Result<std::optional<SlurmAllocation>> a =
      slurm_allocation(env_of({{"SLURM_JOB_ID", "77"}, {"SLURM_JOB_GPUS", "0"}}), &note);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
  EXPECT_NE(note.find("srun"), std::string::npos) << note;
}

TEST(SlurmAllocation, ReadsJobStepNodeRestartsAndGpus) {
  Result<std::optional<SlurmAllocation>> a =
      slurm_allocation(env_of({{"SLURM_JOB_ID", "11"},
                               {"SLURM_ARRAY_JOB_ID", "10"},
                               {"SLURM_ARRAY_TASK_ID", "3"},
                               {"SLURMD_NODENAME", "n2"},
                               {"SLURM_RESTART_COUNT", "1"},
                               {"SLURM_JOB_GPUS", "0,2-3"},
                               {"SLURM_STEP_GPUS", "2"},
                               {"CUDA_VISIBLE_DEVICES", "2"}}));
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(a->has_value());
  const SlurmAllocation& s = **a;
  EXPECT_EQ(s.job_id, "10_3");
  EXPECT_EQ(s.array_task, 3);
  EXPECT_EQ(s.step, "batch");
  EXPECT_EQ(s.node, "n2");
  EXPECT_EQ(s.restart_count, 1);
  EXPECT_EQ(s.gpu_indices, std::vector<int>{2});  // the step's GPUs win over the job's
  EXPECT_EQ(s.cuda_visible_devices, "2");
}

TEST(SlurmAllocation, BadValuesAreErrorsNamingTheVariable) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"SLURM_JOB_GPUS", "0,x"}, {"SLURM_RESTART_COUNT", "-1"}, {"SLURM_JOB_GPUS", "3-1"}}) {
    Result<std::optional<SlurmAllocation>> a =
        slurm_allocation(env_of({{"SLURM_JOB_ID", "1"}, {"SLURMD_NODENAME", "n1"}, {name, value}}));
    ASSERT_FALSE(a.ok()) << name << "=" << value;
    EXPECT_NE(a.error().message().find(name), std::string::npos) << a.error().message();
  }
}

struct DeviceCase {
  std::string what;
  int found;
  std::map<std::string, std::string> env;
  std::string want;  // indices, or "error: <part of the message>"
};

TEST(UsableDevices, MapsSlurmsGpusToTheBackendsDevices) {
  const std::map<std::string, std::string> base = {{"SLURM_JOB_ID", "5"},
                                                   {"SLURMD_NODENAME", "n1"}};
  auto with = [&](std::map<std::string, std::string> more) {
    more.insert(base.begin(), base.end());
    return more;
  };
  const std::vector<DeviceCase> cases = {
      {"unconstrained: the node's indices", 4,
       with({{"SLURM_JOB_GPUS", "1,3"}, {"CUDA_VISIBLE_DEVICES", "1,3"}}), "1,3"},
      {"unconstrained, no CUDA_VISIBLE_DEVICES", 4, with({{"SLURM_JOB_GPUS", "2"}}), "2"},
      {"constrained: NVML sees only the job's GPUs, CUDA's indices are local", 2,
       with({{"SLURM_JOB_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}), "0,1"},
      {"constrained, narrowed by the user", 2,
       with({{"SLURM_JOB_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "1"}}), "1"},
      {"unconstrained, narrowed by the user", 4,
       with({{"SLURM_JOB_GPUS", "1,3"}, {"CUDA_VISIBLE_DEVICES", "3"}}), "3"},
      {"the step's GPUs", 4, with({{"SLURM_JOB_GPUS", "0,1,2,3"}, {"SLURM_STEP_GPUS", "2"}}), "2"},
      {"UUIDs", 4,
       with({{"SLURM_JOB_GPUS", "0,1"}, {"CUDA_VISIBLE_DEVICES", "GPU-d000-1111,GPU-b"}}), "1,3"},
      {"only CUDA_VISIBLE_DEVICES", 4, with({{"CUDA_VISIBLE_DEVICES", "2"}}), "2"},
      {"no GPU given", 4, with({}), "error: was given no GPU"},
      {"NoDevFiles", 4, with({{"CUDA_VISIBLE_DEVICES", "NoDevFiles"}}), "error: --gres=gpu"},
      {"a GPU the backend lacks", 4, with({{"SLURM_JOB_GPUS", "1,7"}}),
       "error: GPU 7, which the backend does not have"},
      {"more GPUs than the backend sees", 2, with({{"SLURM_JOB_GPUS", "0,1,2"}}),
       "error: sees only 2"},
      {"narrowed outside the allocation", 4,
       with({{"SLURM_JOB_GPUS", "1,3"}, {"CUDA_VISIBLE_DEVICES", "2"}}),
       "error: which Slurm did not give this job"},
      {"an unknown UUID", 2, with({{"CUDA_VISIBLE_DEVICES", "GPU-zz"}}), "error: names none"},
      {"an ambiguous UUID prefix", 2, with({{"CUDA_VISIBLE_DEVICES", "GPU-"}}),
       "error: more than one"},
      {"a local index past the job's GPUs", 2,
       with({{"SLURM_JOB_GPUS", "4,5"}, {"CUDA_VISIBLE_DEVICES", "0,2"}}), "error: only 2"},
  };
  for (const DeviceCase& c : cases) {
    Result<std::optional<SlurmAllocation>> a = slurm_allocation(env_of(c.env));
    ASSERT_TRUE(a.ok()) << c.what;
    ASSERT_TRUE(a->has_value()) << c.what;
    Result<std::vector<DeviceInfo>> devices = usable_devices(gpus(c.found), *a);
    if (c.want.rfind("error: ", 0) == 0) {
      ASSERT_FALSE(devices.ok()) << c.what << ": got " << indices(*devices);
      EXPECT_NE(devices.error().message().find(c.want.substr(7)), std::string::npos)
          << c.what << ": " << devices.error().message();
      EXPECT_NE(devices.error().message().find("job 5 on n1"), std::string::npos)
          << c.what << ": " << devices.error().message();
    } else {
      ASSERT_TRUE(devices.ok()) << c.what << ": " << devices.error().message();
      EXPECT_EQ(indices(*devices), c.want) << c.what;
    }
  }
}

TEST(UsableDevices, OutsideSlurmEveryDevice) {
  Result<std::vector<DeviceInfo>> devices = usable_devices(gpus(3), std::nullopt);
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(indices(*devices), "0,1,2");
}

TEST(NodeLocalStateDir, TmpInsideSlurm) {
  SlurmAllocation a;
  EXPECT_EQ(
      node_local_state_dir(a, env_of({{"TMPDIR", "/scratch/j5"}})).rfind("/scratch/j5/colo-", 0),
      0u);
  EXPECT_EQ(node_local_state_dir(a, env_of({})).rfind("/tmp/colo-", 0), 0u);
}

}  // namespace
}  // namespace colo
