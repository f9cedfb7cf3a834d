#include "serve/request_fields.h"

#include <fmt/format.h>

#include "common/text.h"

namespace colo {

using nlohmann::json;

Result<std::string> string_field(const json& request, const char* name, std::string fallback) {
  auto it = request.find(name);
  if (it == request.end() || it->is_null()) return fallback;
  if (!it->is_string()) return Error(fmt::format("'{}' must be a string", name));
  return it->get<std::string>();
}

Result<int64_t> integer_field(const json& request, const char* name, int64_t fallback) {
  auto it = request.find(name);
  if (it == request.end() || it->is_null()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    return Error(fmt::format("'{}' must be a whole number, 0 or more", name));
  return it->get<int64_t>();
}

Result<RunLabel> submission_label(const json& request) {
  RunLabel label;
  auto it = request.find("label");
  if (it == request.end() || it->is_null()) return label;
  if (!it->is_object()) return Error("'label' must be an object");
  Result<std::string> name = string_field(*it, "name", "");
  if (!name.ok()) return name.error().with_context("label");
  Result<std::string> note = string_field(*it, "note", "");
  if (!note.ok()) return note.error().with_context("label");
  label.name = strip_control_chars(*name);
  label.note = strip_control_chars(*note);
  if (auto tags = it->find("tags"); tags != it->end() && !tags->is_null()) {
    if (!tags->is_object()) return Error("label: 'tags' must be an object of strings");
    for (const auto& [key, value] : tags->items()) {
      if (!value.is_string()) return Error("label: 'tags' must be an object of strings");
      label.tags[strip_control_chars(key)] = strip_control_chars(value.get<std::string>());
    }
  }
  return label;
}

Result<std::vector<int64_t>> ids_of(const json& request) {
  std::vector<int64_t> ids;
  auto it = request.find("ids");
  if (it == request.end() || it->is_null()) return ids;
  if (!it->is_array()) return Error("'ids' must be an array of job ids");
  for (const json& id : *it) {
    if (!id.is_number_integer()) return Error("'ids' must be an array of job ids");
    ids.push_back(id.get<int64_t>());
  }
  return ids;
}

std::map<std::string, std::string> string_map(const json& j) {
  std::map<std::string, std::string> out;
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace colo
