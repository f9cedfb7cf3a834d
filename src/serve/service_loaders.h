// ServiceLoaders: the shared data loaders of the jobs submitted to colo
// serve (docs/serve.md, Shared data loaders). One loader per dataset table
// of one submitter, launched when the first job reading it is admitted, run
// as that submitter; it starts outside the service's loop, so its readers
// wait here (held) until it accepts consumers, and are handed on with its
// environment then, or ended with the reason when it could not start. It is
// stopped, and recorded in the service's run, once its last reader has ended.
//
// Owns the loaders; borrows the clock, the run's StoreWriter and the log.
// Not thread-safe: the service's loop alone uses it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "data/loader_process.h"
#include "jobs/job_spec.h"
#include "run/run_engine.h"
#include "store/run_store.h"
#include "store/store_writer.h"

namespace colo {

// A job admitted but not yet handed to the engine (its loader is starting).
struct HeldJob {
  int64_t id = 0;  // the service job id
  EngineJob job;
  RestartPolicy restart = RestartPolicy::kOnFailure;
  int attempts_before = 0;  // attempts recorded before this service process took it
  uid_t owner = 0;
};

struct ServiceLoadersOptions {
  std::string colo_binary;             // the program that runs `data serve` (colo itself)
  std::string logs_root;               // the loaders' files go to its data/<uid> (run/log_layout.h)
  int64_t ready_timeout_ms = 120'000;  // to accept consumers; its readers fail after it
  int64_t run_id = 0;                  // the service's run, where loaders are recorded
};

class ServiceLoaders {
 public:
  ServiceLoaders(Clock& clock, StoreWriter& writer, std::ostream& log,
                 ServiceLoadersOptions options);

  // Makes `held` (which reads a dataset, as row `row`) a reader of its
  // loader, launched if needed. The job back, its environment set, when the
  // loader accepts consumers already (hand it to the engine); nullopt when
  // it is held until poll() hands it on; an error saying why the job cannot
  // run (its table missing, the loader not launched).
  Result<std::optional<HeldJob>> attach(const ServiceJobRow& row, HeldJob held);

  // Looks once at every loader still starting: hands each held job of a
  // ready one to `ready` (its environment set); gives each held job of one
  // that could not start to `failed` with the reason, then stops and records
  // that loader. True when a job was handed on or failed.
  bool poll(const std::function<void(HeldJob)>& ready,
            const std::function<void(const HeldJob&, const std::string& why)>& failed);

  // Job `id` started as row `job_id` of the run's jobs table (for the loader's record).
  void started(int64_t id, int64_t job_id);
  // Takes job `id` out of its loader's held jobs; nullopt when it is not held.
  std::optional<HeldJob> take_held(int64_t id);
  // Job `id` has ended here: its loader stops (recorded) after its last reader.
  void detach(int64_t id);

 private:
  struct Loader {
    std::unique_ptr<SharedLoaders> loaders;
    std::string name;                        // the loader's, unique in this service
    bool ready = false;                      // it accepts consumers
    std::vector<HeldJob> held;               // its readers admitted before it was ready
    std::map<int64_t, std::string> readers;  // service job id -> job name
    std::map<std::string, int64_t> job_ids;  // jobs-table rows by job name, for the record
  };
  // The key of the loader of the job's dataset, launched if needed.
  Result<std::string> loader_for(const ServiceJobRow& row, const EngineJob& job);
  // Stops and records a loader.
  void stop(Loader& loader);

  Clock& clock_;
  StoreWriter& writer_;
  std::ostream& log_;
  const ServiceLoadersOptions options_;
  int started_ = 0;                           // loaders launched: each one's name is unique
  std::map<std::string, Loader> loaders_;     // by owner and table
  std::map<int64_t, std::string> loader_of_;  // service job id -> loaders_ key
};

}  // namespace colo
