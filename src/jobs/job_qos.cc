#include "jobs/job_qos.h"

#include <fmt/format.h>

#include <cmath>

namespace colo {

const char* to_string(QosClass qos) {
  switch (qos) {
    case QosClass::kProtected:
      return "protected";
    case QosClass::kOpportunistic:
      return "opportunistic";
    case QosClass::kNormal:
      break;
  }
  return "normal";
}

std::optional<QosClass> parse_qos_class(std::string_view text) {
  for (QosClass qos : {QosClass::kNormal, QosClass::kProtected, QosClass::kOpportunistic}) {
    if (text == to_string(qos)) return qos;
  }
  return std::nullopt;
}

std::optional<std::string> min_speed_problem(double min_speed) {
  if (std::isfinite(min_speed) && min_speed > 0 && min_speed <= 1) return std::nullopt;
  return fmt::format(
      "must be a fraction of the job's solo speed above 0 and at most 1, such as 0.9, got {}",
      min_speed);
}

Result<std::optional<QosOverride>> qos_override(const std::optional<std::string>& qos,
                                                const std::optional<double>& min_speed) {
  if (!qos && !min_speed) return std::optional<QosOverride>();
  QosOverride over;
  if (qos) {
    std::optional<QosClass> parsed = parse_qos_class(*qos);
    if (!parsed) {
      return Error(fmt::format("--qos must be {}, got \"{}\"", kQosClassesText, *qos));
    }
    over.qos = *parsed;
  }
  if (min_speed) {
    if (std::optional<std::string> problem = min_speed_problem(*min_speed))
      return Error("--min-speed " + *problem);
    if (!qos || over.qos != QosClass::kProtected) {
      return Error(
          "--min-speed is the floor of a protected job: add --qos protected, or leave "
          "--min-speed out");
    }
    over.min_speed = *min_speed;
  }
  return std::optional<QosOverride>(over);
}

void apply_qos_override(const QosOverride& over, QosClass& qos, double& min_speed) {
  const bool was_protected = qos == QosClass::kProtected;
  qos = over.qos;
  // A protected job keeps the file's floor unless the override names one;
  // every other job, and one newly protected, gets the default.
  if (over.qos == QosClass::kProtected && over.min_speed) {
    min_speed = *over.min_speed;
  } else if (over.qos != QosClass::kProtected || !was_protected) {
    min_speed = kDefaultMinSpeed;
  }
}

}  // namespace colo
