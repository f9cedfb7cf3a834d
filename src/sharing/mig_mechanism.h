// The mig mechanism: each job runs on its own MIG compute instance, inside a
// GPU instance colo creates for the run and destroys afterwards.
//
// Ownership record: <state_dir>/<pid>-<monotonic ms>/owner.json (0700),
// written before anything is created and rewritten around every creation: an
// entry for a GPU or compute instance is recorded (profile, placement start,
// id still empty) before the driver is asked to create it, and its id right
// after. So a colo killed at any step leaves a record naming everything it may
// have created, which cleanup_stale_mig_instances() uses at the next start.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "mig/mig_job_layout.h"
#include "sharing/mechanism.h"

namespace colo {

inline constexpr const char* kMigOwnerFileName = "owner.json";
// Set for each job: "<profile> gi<id> ci<id> <MIG uuid>", what the run store
// keeps as the job's instance.
inline constexpr const char* kMigInstanceEnv = "COLO_MIG_INSTANCE";

struct MigRecordedComputeInstance {
  std::string job;
  int slices = 0;
  std::optional<int> id;  // empty: being created when the record was written
  std::string uuid;       // the MIG device's, once known
};

struct MigRecordedGpuInstance {
  std::string profile;
  int profile_id = 0;
  int start = 0;
  int size = 0;
  std::optional<int> id;  // empty: being created when the record was written
  std::vector<MigRecordedComputeInstance> compute_instances;
};

// owner.json: who created which instances on which GPU.
struct MigOwnerRecord {
  int64_t colo_pid = 0;
  std::string hostname;
  UnixMillis start_time_ms = 0;
  int device = 0;           // NVML index when created
  std::string device_uuid;  // what the next colo matches on
  std::vector<MigRecordedGpuInstance> gpu_instances;
};

// Writes atomically (temporary file, then rename).
Status write_mig_owner_record(const std::string& path, const MigOwnerRecord& record);
Result<MigOwnerRecord> read_mig_owner_record(const std::string& path);

// prepare() picks the first of the run's GPUs with MIG mode on, lays the jobs
// out with plan_mig_for_jobs() around the GPU instances already there (which
// it never touches), records, creates each GPU instance and its compute
// instances (one per job), and learns each job's MIG device UUID. It refuses,
// creating nothing, when no GPU has MIG, MIG mode is off (saying how to enable
// it), or the backend cannot create instances; a failure while creating (no
// permission, slices taken meanwhile) destroys what was created and says why.
//
// Each job gets CUDA_VISIBLE_DEVICES=<its MIG device UUID> and
// COLO_MIG_INSTANCE. Jobs run on the GPU prepare() picked, whatever device
// the placement names; only one GPU per run is partitioned.
//
// teardown() (and the destructor) destroy exactly what the record names:
// compute instances first, then GPU instances; idempotent. Borrows `backend`
// and `clock`, which must outlive it. Not thread-safe.
class MigMechanism final : public Mechanism {
 public:
  MigMechanism(std::string state_dir, GpuBackend& backend, std::vector<MigJobDemand> jobs,
               Clock& clock);
  ~MigMechanism() override;
  MigMechanism(const MigMechanism&) = delete;
  MigMechanism& operator=(const MigMechanism&) = delete;

  MechanismKind kind() const override { return MechanismKind::kMig; }
  // Every job has its own compute instance, so all may run at once.
  int max_jobs_per_device() const override;
  Status prepare(const std::vector<DeviceInfo>& devices) override;
  Result<Environment> environment_for(const Placement& placement) override;
  // Every compute instance of the run still shows as a MIG device.
  Status health_check() override;
  Status teardown() override;

  // The record of what this run created, or nullptr before prepare() and
  // after teardown().
  const MigOwnerRecord* record() const { return record_ ? &*record_ : nullptr; }
  // The record's directory ("" when none).
  const std::string& record_dir() const { return dir_; }

 private:
  Status create_instances(MigControl& mig, const std::vector<MigInstancePlan>& plans);
  Status save();

  std::string state_dir_;
  GpuBackend& backend_;
  std::vector<MigJobDemand> jobs_;
  Clock& clock_;
  std::string dir_;
  std::optional<MigOwnerRecord> record_;
  std::map<std::string, std::string> instance_of_job_;  // job -> COLO_MIG_INSTANCE
  std::map<std::string, std::string> uuid_of_job_;
};

// cleanup_stale_mig_instances() over an explicit MIG seam and device list.
// For each <state_dir>/*/owner.json written on this host by a colo no longer
// alive: on the GPU with the recorded UUID, each recorded GPU instance that
// still matches the record (same id, profile and start; for one recorded
// without an id, the GPU instance of that profile at that start) loses its
// compute instances and is destroyed; then the record goes. Instances that
// match no record are never touched. Returns one line per record handled.
Result<std::vector<std::string>> cleanup_stale_mig_instances(
    const std::string& state_dir, MigControl* mig, const std::vector<DeviceInfo>& devices);

}  // namespace colo
