// How values read in the cells of colo's text reports (`colo runs`,
// `colo show`, two runs compared): an absent value as "-", a metric's value
// to four significant digits, a run's label as its name and tags. Pure.
#pragma once

#include <optional>
#include <string>

#include "store/rows.h"

namespace colo {

inline constexpr const char* kAbsentText = "-";

// `format(*value)`, or "-" when there is no value.
template <class T, class F>
std::string or_absent(const std::optional<T>& value, F&& format) {
  return value ? format(*value) : std::string(kAbsentText);
}

// A metric value as people read it: up to 4 significant digits, no exponent
// for ordinary magnitudes ("0.4153", "2.5e-05").
std::string metric_text(double value);

// "name key=value ..." ("-" for none).
std::string label_text(const RunLabel& label);

}  // namespace colo
