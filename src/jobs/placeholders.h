// Placeholders in a job's command, workdir and env values (docs/job-file.md):
// "{name}" stands for a grid parameter's value or a built-in one ({gpus},
// {port}); "{{name}}" is the literal text "{name}"; every other brace is
// literal, so JSON or awk programs in a command need no escaping. Pure.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace colo {

// Placeholders every command, workdir and env value may use besides its grid's
// parameters: the job's GPU count, and a free TCP port chosen when it starts.
inline constexpr std::array<const char*, 2> kBuiltinPlaceholders = {"gpus", "port"};
bool is_builtin_placeholder(std::string_view name);

// A grid parameter's name, and so a placeholder's: letters, digits and '_'.
bool is_param_name(std::string_view name);

// Checks the placeholders of `text` against `params` (the grid's) and the
// built-in ones. Returns an error message naming the unknown placeholder (and
// the nearest parameter), or nothing when every placeholder is known.
std::optional<std::string> check_placeholders(std::string_view text,
                                              const std::set<std::string>& params);

// Replaces each placeholder by its value in `values`, which holds every
// placeholder of `text` (the text has passed check_placeholders).
std::string substitute(std::string_view text, const std::map<std::string, std::string>& values);

// The text with each placeholder marked (a unit separator before its
// "{name}"), so that no literal text reads the same: a job family's template.
// Without placeholders, the text itself.
std::string template_text(std::string_view text);

// Checks a resource_params entry: a grid parameter's name, optionally "^k" (k
// from 1 to 3: the value to that power, e.g. an image size squared for
// pixels). Returns an error message, or nothing when it is valid.
std::optional<std::string> check_resource_param(std::string_view entry,
                                                const std::set<std::string>& params);

}  // namespace colo
