// How colo's JSON writes a fact that may be absent: null, never a made-up value.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace colo {

template <class T>
nlohmann::json value_or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace colo
