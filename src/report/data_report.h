// The shared data loaders of a run in `colo show`: each loader's CPU time,
// memory and work, and each consumer's time waiting for data. Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/run_store.h"

namespace colo {

// A "data loaders:" section (empty text when there are none).
std::string format_data_loaders(const std::vector<DataLoaderRow>& loaders);
// `colo show --json`: units in the key names, absent values null.
nlohmann::json data_loaders_json(const std::vector<DataLoaderRow>& loaders);

}  // namespace colo
