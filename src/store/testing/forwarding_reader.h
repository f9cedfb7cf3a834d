// ForwardingReader: a RunReader that answers every read from a RunStore, for
// tests that count or alter some reads (they override those and call the
// base). Borrows the store, which must outlive it.
#pragma once

#include "store/run_store.h"

namespace colo::testing {

class ForwardingReader : public RunReader {
 public:
  explicit ForwardingReader(RunStore& store) : store_(store) {}
  Result<std::vector<RunRow>> list_runs(int limit) override { return store_.list_runs(limit); }
  using RunReader::run_record;
  Result<RunRecord> run_record(int64_t run_id, MetricSteps steps, Samples samples) override {
    return store_.run_record(run_id, steps, samples);
  }
  Status for_each_sample(int64_t run_id, SampleSink& sink) override {
    return store_.for_each_sample(run_id, sink);
  }
  Result<std::optional<int64_t>> exclusive_baseline(const RunRow& run) override {
    return store_.exclusive_baseline(run);
  }
  Result<std::optional<std::string>> derived(int64_t run_id, std::string_view kind,
                                             int version) override {
    return store_.derived(run_id, kind, version);
  }
  Status keep_derived(int64_t run_id, std::string_view kind, int version,
                      const std::string& body) override {
    return store_.keep_derived(run_id, kind, version, body);
  }
  Result<RunRow> run_row(int64_t run_id) override { return store_.run_row(run_id); }
  Result<std::vector<JobRow>> job_ends(int64_t run_id, int64_t after_id) override {
    return store_.job_ends(run_id, after_id);
  }
  Result<RunRecord> run_window(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms) override {
    return store_.run_window(run_id, from_ms, to_ms);
  }
  Status for_each_sample_between(int64_t run_id, UnixMillis from_ms, UnixMillis to_ms,
                                 SampleSink& sink) override {
    return store_.for_each_sample_between(run_id, from_ms, to_ms, sink);
  }

 private:
  RunStore& store_;
};

}  // namespace colo::testing
