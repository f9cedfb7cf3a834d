// JobSpec as JSON: what `colo submit` sends to the service and what the
// service keeps in its queue, so that a job survives the service's restart
// exactly as it was submitted. Every field of JobSpec round-trips.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/result.h"
#include "jobs/job_spec.h"

namespace colo {

// Keys as the JobSpec fields are named; unset optional fields are left out.
nlohmann::json job_spec_to_json(const JobSpec& job);
// The same with the values of secret-looking environment variables redacted
// (jobs/secret_env.h): the one shape every store keeps of a spec.
nlohmann::json job_spec_to_stored_json(const JobSpec& job);

// The inverse. Checks what a job file's parser would have checked (a name,
// a non-empty command, an absolute working directory, valid environment
// names, percentages from 1 to 100) and says which field is wrong, since the
// JSON may come from another process.
Result<JobSpec> job_spec_from_json(const nlohmann::json& json);

// A spec's [objective] as job_spec_to_json writes it ("objective", "goals"),
// for readers of stored specs that need nothing else of them (colo show,
// the HTTP API): the metric ("" when none) and each declared metric's
// lower-is-better. A malformed spec gives nothing.
struct SpecObjective {
  std::string metric;
  std::map<std::string, bool, std::less<>> lower_is_better;
};
SpecObjective objective_of_spec(const nlohmann::json& spec);

// A spec's class and floor as job_spec_to_json writes them ("qos",
// "min_speed"), for readers of stored specs (colo show, colo queue): normal
// and kDefaultMinSpeed when absent or malformed. The text form parses the
// spec only when it names "qos", so that reading a queue of normal jobs stays
// cheap.
struct SpecQos {
  QosClass qos = QosClass::kNormal;
  double min_speed = kDefaultMinSpeed;
};
SpecQos qos_of_spec(const nlohmann::json& spec);
SpecQos qos_of_spec_text(std::string_view spec_json);

// A grid parameter's value (kept as text, JobSpec::params) as JSON for a
// reader: an integer or a finite number as a number, true/false as a
// boolean, anything else as the string ("0.1" -> 0.1, "adam" -> "adam").
nlohmann::json param_to_json(const std::string& text);
// Every parameter of `params` so.
nlohmann::json params_to_json(const std::map<std::string, std::string>& params);

}  // namespace colo
