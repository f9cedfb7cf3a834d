// SharedLoaders: the shared loaders of one run (or service), each a `colo
// data serve` child process of colo, started before the first job that reads
// its dataset and stopped after the last.
//
// A loader runs in its own process group (JobSupervisor) and stops itself,
// removing its shared memory, when colo dies (PR_SET_PDEATHSIG). Its log
// and final statistics go to <logs_dir>/data-<name>.log and .stats.json.
// Not thread-safe; borrows the clock.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "data/loader_options.h"
#include "jobs/job_supervisor.h"
#include "jobs/run_as.h"

namespace colo {

inline constexpr const char* kDataSocketEnv = "COLO_DATA_SOCKET";

struct SharedLoadersOptions {
  std::string colo_binary;             // the program that runs `data serve` (colo itself)
  std::string logs_dir;                // logs and statistics
  std::string state_dir;               // ownership records of the rings
  int64_t ready_timeout_ms = 120'000;  // to open the dataset and create the ring
  int64_t stop_grace_ms = 5'000;       // TERM, then KILL
  // Whom the loaders run as (a service running as root starts a submitter's
  // loader as the submitter, who must own logs_dir and state_dir); unset: colo's user.
  std::optional<RunAs> run_as;
};

// What a stopped loader left: its statistics (the JSON run_loader writes),
// or a note saying why there are none.
struct LoaderOutcome {
  std::string name;
  std::string path;
  int pid = 0;
  std::string stats_json;  // empty when there are none
  std::string note;
};

class SharedLoaders {
 public:
  SharedLoaders(Clock& clock, SharedLoadersOptions options);
  ~SharedLoaders();  // stops loaders still running
  SharedLoaders(const SharedLoaders&) = delete;
  SharedLoaders& operator=(const SharedLoaders&) = delete;

  // Starts one loader per entry (names must differ) and waits until each
  // accepts consumers. On error, the ones started are stopped again.
  Status start(std::vector<LoaderOptions> loaders, std::ostream& out);
  // Starts them without waiting: ready() says when they accept consumers
  // (colo serve's loop goes on meanwhile). On error, the ones started are
  // stopped again.
  Status launch(std::vector<LoaderOptions> loaders, std::ostream& out);
  // Looks once: true when every loader launched accepts consumers, false
  // while some do not yet; an error when one ended first or was not ready
  // within ready_timeout_ms of its launch (the caller stops them).
  Result<bool> ready();
  // The environment for a job reading `dataset` (COLO_DATA_SOCKET); empty
  // for a dataset without a loader.
  std::map<std::string, std::string> environment_for(const std::string& dataset) const;
  // Loaders that ended by themselves since the last call, as messages.
  std::vector<std::string> poll();
  // Stops every loader and collects what each left.
  std::vector<LoaderOutcome> stop();

 private:
  struct Loader {
    LoaderOptions options;
    std::string log_path;
    pid_t pid = 0;
    int64_t launched_ms = 0;  // monotonic
    bool ready = false;
    bool ended = false;
  };

  Clock& clock_;
  SharedLoadersOptions options_;
  JobSupervisor supervisor_;
  std::vector<Loader> loaders_;
};

}  // namespace colo
