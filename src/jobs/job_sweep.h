// A [[job]] block of a job file as read (no TOML types: each value with the
// line it came from), [defaults] merged in, and its expansion into JobSpecs:
// the grid's cartesian product or a seeded random search's samples, each
// repeated `repeat` times. job_file.cc reads the blocks; everything here is
// pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_spec.h"

namespace colo {

// The most jobs one job file may expand to.
inline constexpr int64_t kMaxExpandedJobs = 100'000;

// A value with the source line it came from, for messages about it later.
template <class T>
struct Sourced {
  T value;
  int line = 0;
};

// The keys [defaults] and [[job]] share. Unset fields are absent.
struct JobSettings {
  std::optional<Sourced<std::string>> workdir;
  std::map<std::string, Sourced<std::string>> env;
  std::optional<uint64_t> gpu_memory_bytes;
  std::optional<uint64_t> host_memory_bytes;
  std::optional<int> cpus;
  std::optional<int> gpus;
  std::optional<int> sm_share_pct;
  std::optional<uint64_t> memory_limit_bytes;
  std::optional<std::string> epoch_regex;
  std::optional<std::string> step_regex;
  std::optional<int64_t> epoch_samples;
  std::optional<int> sm_activity_pct;
  std::optional<int> gpu_util_pct;
  std::optional<int64_t> solo_time_ms;
  std::optional<int64_t> startup_time_ms;
  std::optional<std::string> mig_profile;
  std::optional<std::string> mig_group;
  std::optional<RestartPolicy> restart;
  std::optional<int64_t> stall_timeout_ms;  // 0: "off"
  std::optional<int> priority;
  std::optional<bool> preemptible;
  std::optional<QosClass> qos;
  std::optional<Sourced<double>> min_speed;  // allowed only where qos is protected (check_block)
  std::optional<Sourced<std::string>> dataset;
  std::optional<ProfileSpec> profile;

  // `over` wins where it sets a field; env is merged key by key.
  static JobSettings merge(const JobSettings& base, const JobSettings& over);
};

// A grid parameter: its values as text (a grid's array, a search's choice),
// or a range a random search draws from.
struct GridParam {
  enum class Draw { kListed, kUniform, kLogUniform };
  std::string name;
  std::vector<std::string> values;  // kListed
  Draw draw = Draw::kListed;
  double lo = 0, hi = 0;  // the range of the others
  int line = 0;
};

// A [[job]]'s `search = { kind = "random", samples = N, seed = S }`.
struct RandomSearch {
  int64_t samples = 0;
  uint64_t seed = 0;
  int line = 0;
};

// One [[job]] block before expansion.
struct JobBlock {
  std::string name;
  int line = 0;
  Sourced<std::vector<std::string>> command;
  int64_t repeat = 1;
  // Grid parameters in key order (sorted).
  std::vector<GridParam> grid;
  std::optional<RandomSearch> search;  // else the grid's cartesian product
  std::optional<Sourced<std::vector<std::string>>> resource_params;
  JobSettings settings;  // defaults already merged in
};

// What is wrong with a block as a whole, on its line.
struct BlockProblem {
  int line = 0;
  std::string message;
};

// The checks across a block's keys, in this order: min_speed only where qos
// is "protected" (after [defaults] were merged); a search needs a grid and
// a distribution needs a search; no grid parameter takes a built-in
// placeholder's name; every placeholder of the command, workdir and env names
// a grid parameter or a built-in one; every resource_params entry names a
// grid parameter. Empty when the block may be expanded.
std::vector<BlockProblem> check_block(const JobBlock& block);

// The checks across a `profile`'s keys, whose values were read: it names its
// tool; it takes after_epoch or after, steps or duration, not both of
// either; after_epoch only with the torch tool (the Python client counts
// epochs). The first problem, or nothing.
std::optional<std::string> check_profile(const ProfileSpec& profile);

// How many jobs the block expands to at most: repeat times the grid's points
// (a random search's samples; fewer when its space holds fewer points apart).
// Past kMaxExpandedJobs it stops multiplying: some count above it.
int64_t expanded_count(const JobBlock& block);

// A directory as jobs get it: absolute (a relative `path` against `base_dir`),
// lexically normal, without a trailing '/'.
std::string normal_dir(const std::string& path, const std::string& base_dir);

// Appends the block's instances to `jobs`: one per point of the grid (the
// first parameter varying slowest) or of the search, each repeated `repeat`
// times, named "name[p=v,...]" ("#r" after it when repeated). `path` names the
// file in each job's source; a relative workdir is resolved against
// `base_dir` (normal_dir). The block has passed check_block.
void expand(const JobBlock& block, const std::string& path, const std::string& base_dir,
            std::vector<JobSpec>& jobs);

// The checks across a file's blocks, each of which passed check_block: the
// file expands to at most kMaxExpandedJobs jobs (else only the block where
// the count passes it is a problem), then every dataset a block names is one
// of `datasets` (its [data.NAME] tables, by name). Empty when the blocks may
// be expanded.
std::vector<BlockProblem> check_blocks(const std::vector<JobBlock>& blocks,
                                       const std::vector<std::string>& datasets);

// What every job of a file shares (its [objective], [early_stop] and [run]
// fail_fast; JobSpec's fields of the same names).
struct FileWide {
  std::string objective;
  std::map<std::string, bool> lower_is_better;
  std::optional<EarlyStopSpec> early_stop;
  bool fail_fast = true;
};

// expand() of each block in turn, appending to `jobs`, each instance given
// `shared`. A name used twice after expansion is a problem on the line of
// the block that used it again. The blocks have passed check_blocks.
std::vector<BlockProblem> expand_blocks(const std::vector<JobBlock>& blocks,
                                        const std::string& path, const std::string& base_dir,
                                        const FileWide& shared, std::vector<JobSpec>& jobs);

}  // namespace colo
