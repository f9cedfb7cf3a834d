#include "common/target_syntax.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <optional>
#include <vector>

namespace colo {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// A positive id; nullopt for 0 or one too large to hold.
std::optional<int64_t> positive(std::string_view digits) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || v <= 0) return std::nullopt;
  return v;
}

// Splits "A<sep>B" where both sides are digits; nullopt otherwise.
std::optional<std::pair<std::string_view, std::string_view>> digit_pair(std::string_view text,
                                                                        char sep) {
  const size_t at = text.find(sep);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view a = text.substr(0, at);
  std::string_view b = text.substr(at + 1);
  if (!all_digits(a) || !all_digits(b)) return std::nullopt;
  return std::pair{a, b};
}

Error refused(std::string_view text, std::string_view what, const TargetForms& forms) {
  const std::string who = forms.command.empty() ? std::string() : std::string(forms.command) + " ";
  return Error(fmt::format("'{}' {}: {}takes {}", text, what, who, describe_forms(forms)));
}

}  // namespace

std::string describe_forms(const TargetForms& forms) {
  std::vector<std::string> each;
  if (forms.id) each.push_back(fmt::format("a {} (12)", forms.id_noun));
  if (forms.range) each.push_back(fmt::format("a range of {}s (12-21)", forms.id_noun));
  if (forms.last) each.push_back("last");
  if (forms.name) each.push_back("a name of your own");
  if (forms.submission) each.push_back("RUN/SUB (a submission, as colo submit prints it: 3/7)");
  if (each.empty()) return "nothing";
  if (each.size() == 1) return each.front();
  const std::string tail = each.back();
  each.pop_back();
  return fmt::format("{} or {}", fmt::join(each, ", "), tail);
}

Result<Target> parse_target(std::string_view text, const TargetForms& forms) {
  Target t;
  if (text.empty() || text == "last") {
    if (!forms.last) return refused(text.empty() ? "\"\"" : text, "is not taken here", forms);
    return t;
  }
  if (all_digits(text)) {
    std::optional<int64_t> id = positive(text);
    if (!id) return refused(text, fmt::format("is no {} (ids count from 1)", forms.id_noun), forms);
    if (!forms.id) return refused(text, fmt::format("is a {}", forms.id_noun), forms);
    t.kind = Target::Kind::kId;
    t.first = *id;
    return t;
  }
  if (auto pair = digit_pair(text, '-')) {
    std::optional<int64_t> first = positive(pair->first);
    std::optional<int64_t> last = positive(pair->second);
    if (!first || !last || *first > *last) {
      return refused(text, "is no range (FIRST-LAST, ids from 1, FIRST at most LAST)", forms);
    }
    if (*last - *first >= kMaxTargetRange) {
      return refused(text, fmt::format("spans more than {} ids", kMaxTargetRange), forms);
    }
    if (!forms.range) {
      return refused(
          text, fmt::format("is a range of {}s, where one target is meant", forms.id_noun), forms);
    }
    t.kind = Target::Kind::kRange;
    t.first = *first;
    t.last = *last;
    return t;
  }
  if (auto pair = digit_pair(text, '/')) {
    std::optional<int64_t> run = positive(pair->first);
    std::optional<int64_t> sub = positive(pair->second);
    if (!run || !sub) return refused(text, "is no RUN/SUB (both count from 1)", forms);
    if (!forms.submission) return refused(text, "names a submission", forms);
    t.kind = Target::Kind::kSubmission;
    t.first = *run;
    t.last = *sub;
    return t;
  }
  if (!forms.name) return refused(text, fmt::format("is not a {}", forms.id_noun), forms);
  t.kind = Target::Kind::kName;
  t.name = std::string(text);
  return t;
}

Status check_target_name(std::string_view name) {
  if (name.empty()) return OkStatus();  // no name
  const TargetForms everything{
      .last = true, .id = true, .range = true, .submission = true, .name = true};
  Result<Target> read = parse_target(name, everything);
  if (read.ok() && read->kind == Target::Kind::kName) return OkStatus();
  return Error(fmt::format(
      "'{}': a name cannot be a number, 'last', a range FIRST-LAST or RUN/SUB (wherever a "
      "target is named, those read as an id, the most recent run, a range or a submission)",
      name));
}

}  // namespace colo
