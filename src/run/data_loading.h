// What `colo run` does for shared data loading (the glue between the job
// file, the data/ loaders, the engine's jobs and the store): the loaders a
// run needs, what each job gets from them, and the record of what they did.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "data/loader_options.h"
#include "data/loader_process.h"
#include "jobs/job_spec.h"
#include "run/run_engine.h"
#include "store/run_store.h"
#include "store/store_writer.h"

namespace colo {

// One loader per [data.NAME] table that at least one job names, with the
// table's settings over the loader's defaults.
Result<std::vector<LoaderOptions>> loaders_for(const JobFile& file);

// The loader of one table, for `consumers` jobs that name it. Without a
// `ring` in the table, the ring is default_ring_bytes(consumers, the free
// space of /dev/shm).
Result<LoaderOptions> loader_options_for(const DataSourceSpec& spec, int consumers = 1);

// The ring a loader gets when its table does not say: 512 MiB per consumer,
// at least 1 GiB, and no more than half of `shm_free_bytes` (but not below
// 1 GiB for that). Trainers under MPS drift apart; the slowest holds the
// oldest chunk, and once the ring is full the others wait for data with the
// decoders idle. At 7 ResNet-50 trainers (batch 64, 224 px) on an H200 a
// 1 GiB ring (about 4 batches each) had them waiting 23-28% of the time,
// a 4 GiB one 2% (docs/results/2026-11-26-h200-data-sharing).
uint64_t default_ring_bytes(int consumers, uint64_t shm_free_bytes);

// A stopped loader's record for the store: its statistics, each consumer
// matched to its job by name (`job_ids`), or the note saying why there are
// no statistics.
DataLoaderRow loader_record(const LoaderOutcome& outcome,
                            const std::map<std::string, int64_t>& job_ids);

// Gives each job that reads a dataset its loader's environment
// (COLO_DATA_SOCKET) and its cost on the host (the auto policy counts it once
// for all its readers); `out` is told of a dataset whose loader is not
// running. Returns each job's id by name, for loader_record().
std::map<std::string, int64_t> attach_loaders(std::vector<EngineJob>& jobs,
                                              const SharedLoaders& loaders,
                                              const std::vector<LoaderOptions>& options,
                                              std::ostream& out);

// Records each stopped loader of run `run_id` and tells `out` what it did.
void record_loaders(const std::vector<LoaderOutcome>& outcomes,
                    const std::map<std::string, int64_t>& job_ids, int64_t run_id,
                    StoreWriter& writer, std::ostream& out);

}  // namespace colo
