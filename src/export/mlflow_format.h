// MLflow's file store as text: the pieces of the on-disk layout that
// `mlflow ui --backend-store-uri DIR` reads (mlflow/store/tracking/file_store.py),
// written without MLflow. Pure functions, each tested alone; mlflow_export.h
// puts them on disk.
//
//   DIR/0/meta.yaml                             the Default experiment MLflow expects
//   DIR/.trash/                                 where MLflow moves deleted experiments
//   DIR/<experiment id>/meta.yaml               an experiment (mlflow_experiment_meta)
//   DIR/<experiment id>/tags/<key>              an experiment tag: the file holds its value
//   DIR/<experiment id>/<run id>/meta.yaml      a run (mlflow_run_meta)
//   DIR/<experiment id>/<run id>/params/<key>   a param: its value, no newline
//   DIR/<experiment id>/<run id>/tags/<key>     a tag: its value, no newline
//   DIR/<experiment id>/<run id>/metrics/<key>  a metric: one line per point (mlflow_metric_line)
//   DIR/<experiment id>/<run id>/artifacts/
//
// A key holding '/' is a path below its folder (metrics/system/gpu_0_utilization_percentage
// is the metric "system/gpu_0_utilization_percentage"). MLflow reads every file as UTF-8 and
// meta.yaml with PyYAML's safe loader, its keys in alphabetical order as it writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "jobs/job_state.h"

namespace colo {

// MLflow's RunStatus (mlflow/protos/service.proto): the number a run's
// meta.yaml holds as `status`.
enum class MlflowRunStatus : int {
  kRunning = 1,
  kScheduled = 2,
  kFinished = 3,
  kFailed = 4,
  kKilled = 5,
};

// A colo job's state as an MLflow status: ok -> FINISHED; failed, oom ->
// FAILED; killed (a signal colo did not send), cancelled, interrupted (colo
// died under it) -> KILLED; running -> RUNNING; queued -> SCHEDULED. The
// exact state goes into the run's colo.state tag.
MlflowRunStatus mlflow_status(JobState state);

// MLflow's SourceType LOCAL (service.proto): the source_type its file store
// writes for every run.
inline constexpr int kMlflowSourceLocal = 4;

// What MLflow accepts (mlflow/utils/validation.py): keys of at most 250
// characters; param values of at most 6000, tag values of at most 5000.
inline constexpr size_t kMlflowMaxKeyLength = 250;
inline constexpr size_t kMlflowMaxParamValueLength = 6000;
inline constexpr size_t kMlflowMaxTagValueLength = 5000;

// `text` with every byte that does not start a valid UTF-8 sequence (stray
// continuation bytes, overlong forms, surrogates, beyond U+10FFFF) replaced by
// U+FFFD: MLflow decodes every file as UTF-8 and fails on anything else.
std::string valid_utf8(std::string_view text);

// valid_utf8(text) cut to at most `max_bytes` bytes, never inside a character.
std::string truncate_utf8(std::string_view text, size_t max_bytes);

// `text` as one YAML scalar that a YAML 1.1 loader (PyYAML's safe loader,
// which MLflow reads meta.yaml with) reads back as the same string:
//   - plain when nothing else can be read into it: a letter or '/' first,
//     then only letters, digits and _ . / : -, not ending with ':', and not
//     one of YAML 1.1's boolean or null words (yes, No, ON, null, ...);
//   - else single-quoted, a quote doubled ('it''s');
//   - double-quoted with escapes (\n, \t, \", \\, \xNN, \uNNNN) when it holds
//     a character a single-quoted scalar would fold or that YAML forbids raw:
//     control characters, DEL, C1 controls, U+2028, U+2029, U+FEFF, U+FFFE/F.
// Bytes that are not UTF-8 become U+FFFD first (valid_utf8).
std::string yaml_scalar(std::string_view text);

// `name` as an MLflow param, tag or metric key, which may hold only ASCII
// letters, digits, _ - . space and /, and must be a normalized relative path
// (it is a file name below the run's folder):
//   - every other character (one UTF-8 character at a time) becomes '_';
//   - empty path segments are dropped (leading, trailing and doubled '/');
//     a "." segment becomes "_" and a ".." segment "__"; a leading ".." "_.";
//   - at most kMlflowMaxKeyLength characters; an empty result is "_".
// "val/acc" stays "val/acc"; "loss@top-1" becomes "loss_top-1".
std::string mlflow_key(std::string_view name);

// The keys of one folder (a run's params, tags or metrics): each name made a
// key (mlflow_key) that no other key of the folder has, and that is not the
// file of one key and a folder of another at once ("a" and "a/b"): "_2",
// "_3", ... is appended to the segment that would clash. Not thread-safe.
class MlflowKeys {
 public:
  // The key given to `name` before, else a new one (unique_key).
  std::string key(std::string_view name);
  // A new key for `name`, even when `name` was given one before (two
  // metrics of the same name from different sources).
  std::string unique_key(std::string_view name);

 private:
  std::map<std::string, std::string, std::less<>> given_;  // name -> its key
  std::set<std::string> files_;                            // keys given
  std::set<std::string> folders_;                          // their leading segments
};

// A metric value as Python's repr(float) writes it, which is what MLflow
// writes and float() reads back: "1.0", "0.25", "-3.0", "1e-05", "nan",
// "inf", "-inf" (the shortest form that gives the same double back).
std::string mlflow_metric_value(double value);

// One line of a metric file, as MLflow's file store appends it:
// "<timestamp in Unix ms> <value> <step>\n".
std::string mlflow_metric_line(UnixMillis time_ms, double value, int64_t step);

// The file: URI of an absolute path, percent-encoded as Python's
// pathlib.Path.as_uri() does (every byte but letters, digits, _ . - ~ and /):
// "/tmp/my runs" -> "file:///tmp/my%20runs".
std::string file_uri(std::string_view absolute_path);

// Ids derived from what they stand for, so that exporting the same thing
// again gives the same ids: an experiment id of 18 decimal digits (the form
// of MLflow's own), and a run id of 32 lowercase hex digits (uuid4().hex's form).
std::string mlflow_experiment_id(std::string_view source);
std::string mlflow_run_id(std::string_view source);

struct MlflowExperimentMeta {
  std::string experiment_id;
  std::string name;
  std::string artifact_location;  // file_uri(DIR/<experiment id>)
  UnixMillis creation_time_ms = 0;
  UnixMillis last_update_time_ms = 0;
};

// An experiment's meta.yaml: artifact_location, creation_time, experiment_id,
// last_update_time, lifecycle_stage (active), name, in this order.
std::string mlflow_experiment_meta(const MlflowExperimentMeta& meta);

struct MlflowRunMeta {
  std::string run_id;  // also run_uuid
  std::string experiment_id;
  std::string run_name;
  std::string artifact_uri;  // file_uri(DIR/<experiment id>/<run id>/artifacts)
  std::string user_id;
  MlflowRunStatus status = MlflowRunStatus::kRunning;
  // Never null: MLflow's file store sorts runs by it and fails on a null.
  UnixMillis start_time_ms = 0;
  std::optional<UnixMillis> end_time_ms;  // null while it runs
};

// A run's meta.yaml as MLflow's file store writes it once the run has ended:
// artifact_uri, end_time, entry_point_name (''), experiment_id,
// lifecycle_stage (active), run_id, run_name, run_uuid, source_name (''),
// source_type (4, LOCAL), source_version (''), start_time, status (a
// number), tags ([]), user_id, in this order.
std::string mlflow_run_meta(const MlflowRunMeta& meta);

}  // namespace colo
