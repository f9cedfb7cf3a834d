// Small text helpers shared by the modules that parse what people type.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace colo {

// `s` without leading and trailing white space (std::isspace).
std::string_view trim_space(std::string_view s);

// `s` with ASCII letters in lower case.
std::string ascii_lower(std::string_view s);

// The text of a C buffer of `size` bytes: up to its first NUL, or all of it.
std::string c_string(const char* buffer, size_t size);

// Control characters are what a terminal acts on instead of showing: C0
// (bytes 0x00-0x1f, ESC, BEL, CR and TAB among them), DEL (0x7f) and C1
// (U+0080-U+009F, written in UTF-8 as 0xc2 0x80-0x9f).
//
// The byte offset of the first control character in `s`; nullopt when none.
std::optional<size_t> control_char_at(std::string_view s);
// `s` with its control characters removed: for text a user sends that other
// users see (a job file's name, metric names). Fields that also decide what
// runs (a command, a directory, a regex) are refused instead (see
// job_spec_from_json), so that what is shown is what runs.
std::string strip_control_chars(std::string_view s);

// `s` cut for a terminal: at most `max_lines` lines and `max_bytes` bytes
// (never inside a UTF-8 character), followed by what `more` says when it
// was cut ("... (N more bytes: <more>)"); `s` itself when it fits.
std::string shorten_text(std::string_view s, size_t max_lines, size_t max_bytes,
                         std::string_view more);

// `s` safe as HTML text or an attribute's value: & < > " escaped.
std::string escape_html(std::string_view s);

// The letters to change, add or remove that make `a` into `b`, case aside
// (Levenshtein's distance).
size_t edit_distance(std::string_view a, std::string_view b);

// " (did you mean 'command'?)" when one of `candidates` (strings) is close
// enough to what was typed, else "".
template <class Names>
std::string did_you_mean(std::string_view typed, const Names& candidates) {
  const size_t limit = typed.size() <= 3 ? 1 : typed.size() <= 6 ? 2 : (typed.size() + 2) / 3;
  std::string best;
  size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    const size_t d = edit_distance(typed, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace colo
