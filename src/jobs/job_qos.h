// A job's quality-of-service class (docs/policy.md, "Protected and
// opportunistic jobs"): what it asks of the GPU it shares, in the words of
// Kubernetes' QoS classes and Slurm's QOS.
//   protected:     it must keep `min_speed` of its solo speed beside its
//                  neighbours (a fraction, 0.9 by default);
//   normal:        today's behaviour: packed for the machine's total;
//   opportunistic: it fills what is left, at the lowest priority, capped,
//                  first to be stopped.
// Only the vocabulary and its checks live here (pure, no JobSpec): the job
// file, the stored spec JSON and the command line all read and check the
// class through these functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace colo {

enum class QosClass { kNormal, kProtected, kOpportunistic };

// A protected job's floor unless it says otherwise: 0.9 of its solo speed.
inline constexpr double kDefaultMinSpeed = 0.9;

// "normal", "protected", "opportunistic".
const char* to_string(QosClass qos);
// The inverse; nullopt for anything else (exact, lower case).
std::optional<QosClass> parse_qos_class(std::string_view text);
// What to write instead, for messages: "\"protected\", \"normal\" or \"opportunistic\"".
inline constexpr const char* kQosClassesText = R"("protected", "normal" or "opportunistic")";

// Why `min_speed` is not a floor (a fraction x with 0 < x <= 1, finite), or
// nullopt when it is one.
std::optional<std::string> min_speed_problem(double min_speed);

// The command line's --qos CLASS and --min-speed X, over the job file for
// every job (`colo submit`, `colo run`).
struct QosOverride {
  QosClass qos = QosClass::kNormal;
  std::optional<double> min_speed;  // protected only; unset: see apply_qos_override
};

// Checks the flags as given: nullopt when neither is given; an error when the
// class is not one of the three, when min_speed is not a floor, or when
// min_speed comes without --qos protected. Errors name the flag and say what
// to write.
Result<std::optional<QosOverride>> qos_override(const std::optional<std::string>& qos,
                                                const std::optional<double>& min_speed);

// A job's class and floor under `over`: its class becomes over.qos; a
// protected job's floor is over.min_speed when given, else the floor the file
// gave it when the file made it protected already, else kDefaultMinSpeed.
void apply_qos_override(const QosOverride& over, QosClass& qos, double& min_speed);

}  // namespace colo
