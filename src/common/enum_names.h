// EnumNames: the one table between an enum's values and the names colo
// writes for them (in the store, in JSON, for people), read both ways.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"

namespace colo {

template <class E, size_t N>
struct EnumNames {
  std::string_view what;  // "job state", for errors
  std::array<std::pair<E, std::string_view>, N> names;

  // The value's name; "unknown" for a value not in the table.
  std::string name(E value) const {
    for (const auto& [v, n] : names) {
      if (v == value) return std::string(n);
    }
    return "unknown";
  }
  // The value named `text`; an error lists the names.
  Result<E> parse(std::string_view text) const {
    std::string known;
    for (const auto& [v, n] : names) {
      if (text == n) return v;
      known += fmt::format("{}{}", known.empty() ? "" : ", ", n);
    }
    return Error(fmt::format("unknown {} '{}'; expected one of {}", what, text, known));
  }
};

}  // namespace colo
