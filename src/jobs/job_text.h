// The text rules of a job file's values (docs/job-file.md), apart from the
// TOML reader (job_file.cc) so that they are tested without a file: which
// names a job, a dataset and an environment variable may have, which
// characters a grid value may not hold, and how a float becomes text. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace colo {

// A job's or a dataset's name: letters, digits, '_', '.' or '-', not empty.
bool is_job_name(std::string_view s);

// An environment variable's name: a grid parameter's (letters, digits and
// '_'), not starting with a digit.
bool is_env_name(std::string_view s);

// The first ASCII control character of `text` (NUL, ESC, newline, ...: they
// cut arguments short at exec or reach a terminal as escape codes), escaped
// as "\x1b"; nullopt when it has none.
std::optional<std::string> first_control_char(std::string_view text);

// The shortest text that reads back as the same double, always with a
// decimal point or exponent ("0.1", "1.0", "1e+20"), as Python prints floats.
std::string format_float(double value);

// Whether `text` is only white space (an empty file).
bool only_white_space(std::string_view text);

}  // namespace colo
