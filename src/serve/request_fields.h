// The fields of a socket request (one JSON object, serve/protocol.h), read
// with their types checked: a field that is absent or null takes its
// fallback; one that holds anything else is an error naming the field and
// what it must hold, which the service answers as it is. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "store/rows.h"

namespace colo {

// A string field.
Result<std::string> string_field(const nlohmann::json& request, const char* name,
                                 std::string fallback);
// A whole number, 0 or more.
Result<int64_t> integer_field(const nlohmann::json& request, const char* name, int64_t fallback);
// "ids": an array of job ids (none when absent).
Result<std::vector<int64_t>> ids_of(const nlohmann::json& request);
// A submit request's "label" ({"name", "tags": {KEY: VALUE}, "note"}, each
// optional), control characters removed (other users' views show it).
Result<RunLabel> submission_label(const nlohmann::json& request);
// The string members of an object (others, and anything not an object, give
// nothing): a request's "env".
std::map<std::string, std::string> string_map(const nlohmann::json& j);

}  // namespace colo
