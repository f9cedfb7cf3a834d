// Small text helpers shared by the modules that parse what people type.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace colo {

// `s` without leading and trailing white space (std::isspace).
std::string_view trim_space(std::string_view s);

// `s` with ASCII letters in lower case.
std::string ascii_lower(std::string_view s);

// The text of a C buffer of `size` bytes: up to its first NUL, or all of it.
std::string c_string(const char* buffer, size_t size);

}  // namespace colo
