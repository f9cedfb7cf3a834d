#include "sched/family.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <set>
#include <unordered_map>

#include "common/units.h"
#include "sched/least_squares.h"

namespace colo {
namespace {

// The least relative uncertainty a fit or a sibling's measurement is given.
constexpr double kFitFloor = 0.05;
// Most instances named in an estimate's source.
constexpr size_t kNamedInstances = 3;

// Differences between two instances below both bounds are measurement noise.
struct Noise {
  double relative = 0;
  double absolute = 0;
};

Noise noise_of(Quantity q) {
  switch (q) {
    case Quantity::kMemory:
      return {0.10, 128.0 * 1024 * 1024};
    case Quantity::kSmActivity:
      return {0.15, 3.0};
    case Quantity::kRate:
      return {0.10, 0.0};
  }
  return {};
}

using Getter = std::function<std::optional<double>(const JobProfile&)>;

Getter getter_of(Quantity q) {
  switch (q) {
    case Quantity::kMemory:
      return [](const JobProfile& p) -> std::optional<double> {
        if (!p.peak_memory_bytes) return std::nullopt;
        return static_cast<double>(*p.peak_memory_bytes);
      };
    case Quantity::kSmActivity:
      return [](const JobProfile& p) { return p.sm_active_pct; };
    case Quantity::kRate:
      return [](const JobProfile& p) { return p.samples_per_s; };
  }
  return [](const JobProfile&) { return std::optional<double>(); };
}

std::string format_value(Quantity q, double v) {
  switch (q) {
    case Quantity::kMemory:
      return format_bytes(static_cast<uint64_t>(std::max(0.0, v)));
    case Quantity::kSmActivity:
      return fmt::format("{:.0f}%", v);
    case Quantity::kRate:
      return fmt::format("{:.0f} samples/s", v);
  }
  return "";
}

std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string value_in(const std::map<std::string, std::string>& params, const std::string& name) {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

struct Resource {
  std::string name;
  int power = 1;
};

Resource parse_resource(const std::string& entry) {
  size_t caret = entry.find('^');
  if (caret == std::string::npos) return {entry, 1};
  return {entry.substr(0, caret), std::clamp(std::atoi(entry.c_str() + caret + 1), 1, 3)};
}

// Every parameter named by the target or an instance, sorted.
std::vector<std::string> all_params(const std::vector<FamilyInstance>& instances,
                                    const std::map<std::string, std::string>& target) {
  std::set<std::string> names;
  for (const auto& [name, value] : target) names.insert(name);
  for (const FamilyInstance& i : instances) {
    for (const auto& [name, value] : i.params) names.insert(name);
  }
  return {names.begin(), names.end()};
}

std::string list_names(const std::vector<const FamilyInstance*>& used) {
  std::string out;
  for (size_t k = 0; k < used.size() && k < kNamedInstances; ++k)
    out += (k == 0 ? "" : ", ") + used[k]->name;
  if (used.size() > kNamedInstances)
    out += fmt::format(" and {} more", used.size() - kNamedInstances);
  return out;
}

// How uncertain an instance's measured rate is (a rate measured beside
// other jobs is no solo rate, and neither is an estimate made from it); 0
// for memory and SM activity, whose fits stand on their own spread.
double input_uncertainty(Quantity q, const FamilyInstance& i) {
  return q == Quantity::kRate ? i.measured.rate_uncertainty : 0.0;
}

}  // namespace

// Named (not file-local): FamilyFit::Index keeps them.
namespace family_detail {

// One quantity's estimate for one instance.
struct QuantityEstimate {
  double value = 0;
  double uncertainty = 0;
  std::string basis;  // "sibling toy[lr=0.1]", "a fit over batch_size to ..."
};

struct Fitted {
  std::optional<QuantityEstimate> estimate;
  std::string missing;
};

}  // namespace family_detail

using family_detail::Fitted;
using family_detail::QuantityEstimate;

namespace {

// The instances that can speak for `target` on a quantity: those measured
// with the same values of the categorical parameters that matter; the
// numeric ones that matter (with their powers) define the feature.
struct Basis {
  std::vector<const FamilyInstance*> candidates;
  std::vector<Resource> numeric;
  std::string missing;  // when there are no candidates
};

Basis basis_for(const std::vector<FamilyInstance>& instances, const Getter& get,
                const std::map<std::string, std::string>& target,
                const std::vector<ParamEffect>& effects) {
  Basis b;
  std::vector<const FamilyInstance*> measured;
  for (const FamilyInstance& i : instances) {
    if (get(i.measured)) measured.push_back(&i);
  }
  if (measured.empty()) {
    b.missing = "no measured instance yet";
    return b;
  }
  std::vector<std::string> categorical;
  for (const ParamEffect& e : effects) {
    if (!e.matters) continue;
    bool numeric = number(value_in(target, e.param)).has_value();
    for (const FamilyInstance* i : measured)
      numeric = numeric && number(value_in(i->params, e.param)).has_value();
    if (numeric) {
      b.numeric.push_back({e.param, e.power});
    } else {
      categorical.push_back(e.param);
    }
  }
  for (const FamilyInstance* i : measured) {
    if (std::all_of(categorical.begin(), categorical.end(), [&](const std::string& p) {
          return value_in(i->params, p) == value_in(target, p);
        }))
      b.candidates.push_back(i);
  }
  if (b.candidates.empty()) {
    std::string which;
    for (const std::string& p : categorical)
      which += fmt::format("{}{}={}", which.empty() ? "" : ",", p, value_in(target, p));
    b.missing = fmt::format("no measured instance with {}", which);
  }
  return b;
}

double feature(const std::map<std::string, std::string>& params,
               const std::vector<Resource>& numeric) {
  double x = 1;
  for (const Resource& r : numeric) x *= std::pow(*number(value_in(params, r.name)), r.power);
  return x;
}

std::string feature_name(const std::vector<Resource>& numeric) {
  std::string out;
  for (const Resource& r : numeric)
    out += (out.empty() ? "" : " x ") + r.name + (r.power > 1 ? fmt::format("^{}", r.power) : "");
  return out;
}

Fitted fit_quantity(const std::vector<FamilyInstance>& instances, Quantity q, const Getter& get,
                    const std::map<std::string, std::string>& target,
                    const std::vector<ParamEffect>& effects) {
  Basis b = basis_for(instances, get, target, effects);
  if (b.candidates.empty()) return {std::nullopt, b.missing};
  const double xt = feature(target, b.numeric);
  std::vector<const FamilyInstance*> exact;
  std::vector<std::pair<double, double>> points;  // (x, y)
  for (const FamilyInstance* i : b.candidates) {
    const double x = feature(i->params, b.numeric);
    if (std::abs(x - xt) <= 1e-9 * std::max(1.0, std::abs(xt))) exact.push_back(i);
    points.emplace_back(x, *get(i->measured));
  }
  if (!exact.empty()) {
    // Measured at these values: the largest peak memory, the mean otherwise.
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    double sum = 0;
    for (const FamilyInstance* i : exact) {
      const double v = *get(i->measured);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    const double value = q == Quantity::kMemory ? hi : sum / static_cast<double>(exact.size());
    QuantityEstimate e;
    e.value = value;
    e.uncertainty = value > 0 ? (hi - lo) / value : 0;
    for (const FamilyInstance* i : exact)
      e.uncertainty = std::max(e.uncertainty, input_uncertainty(q, *i));
    if (exact.size() == 1 && exact.front()->params == target) {
      e.basis = "its own measurement";
    } else {
      e.basis = exact.size() == 1
                    ? "sibling " + exact.front()->name
                    : fmt::format("{} siblings ({})", exact.size(), list_names(exact));
    }
    return {e, ""};
  }
  std::set<double> xs;
  for (const auto& [x, y] : points) xs.insert(x);
  if (xs.size() < 2) {
    std::string values;
    for (const Resource& r : b.numeric)
      values += fmt::format("{}{}", values.empty() ? "" : ", ",
                            value_in(b.candidates.front()->params, r.name));
    return {std::nullopt, fmt::format("one measured value of {} ({}): a fit needs two",
                                      feature_name(b.numeric), values)};
  }
  const Line line = *fit_line(points);  // two distinct x at least (above)
  double residual = 0;
  double y_min = std::numeric_limits<double>::infinity();
  for (const auto& [x, y] : points) {
    const double fitted = line.at(x);
    residual = std::max(residual, std::abs(y - fitted) / std::max(std::abs(fitted), 1e-9));
    y_min = std::min(y_min, y);
  }
  const double x_lo = *xs.begin();
  const double x_hi = *xs.rbegin();
  const double outside = xt < x_lo ? x_lo - xt : xt > x_hi ? xt - x_hi : 0.0;
  QuantityEstimate e;
  // Never below half the least measured value: a line through noisy points
  // may dip towards zero outside them.
  e.value = std::max(line.at(xt), 0.5 * y_min);
  e.uncertainty = std::max(residual, kFitFloor) * (1.0 + outside / (x_hi - x_lo));
  for (const FamilyInstance* i : b.candidates)
    e.uncertainty = std::max(e.uncertainty, input_uncertainty(q, *i));
  e.basis = fmt::format("a fit over {} to {}", feature_name(b.numeric), list_names(b.candidates));
  return {e, ""};
}

// The instance most like `target` among those with a value for `get`: the
// fewest differing parameters.
const FamilyInstance* nearest(const std::vector<FamilyInstance>& instances,
                              const std::map<std::string, std::string>& target,
                              const std::function<bool(const JobProfile&)>& has) {
  const FamilyInstance* best = nullptr;
  size_t best_diff = 0;
  for (const FamilyInstance& i : instances) {
    if (!has(i.measured)) continue;
    size_t diff = 0;
    for (const auto& [name, value] : target) diff += value_in(i.params, name) != value ? 1 : 0;
    for (const auto& [name, value] : i.params) diff += target.contains(name) ? 0 : 1;
    if (best == nullptr || diff < best_diff) {
      best = &i;
      best_diff = diff;
    }
  }
  return best;
}

// The widest pair of instances that differ in one parameter alone, as
// param_effects() found it (lo == nullptr: none).
struct Widest {
  const FamilyInstance* lo = nullptr;
  const FamilyInstance* hi = nullptr;
  double lo_value = 0;
  double hi_value = 0;
  double widest = -1;
};

// The effect of `p` on `q` given the widest pair.
ParamEffect effect_of(Quantity q, const std::string& p, const Widest& w) {
  const Noise noise = noise_of(q);
  ParamEffect e{p, 1, presumed_to_matter(p), false, ""};
  if (w.lo == nullptr) {
    e.reason = e.matters ? "presumed from its name (no two measured instances differ in it alone)"
                         : "presumed neutral (no two measured instances differ in it alone)";
  } else {
    e.measured = true;
    e.matters = w.widest > noise.relative && w.hi_value - w.lo_value > noise.absolute;
    e.reason =
        fmt::format("measured: {} {}, {} {}{}", w.lo->name, format_value(q, w.lo_value), w.hi->name,
                    format_value(q, w.hi_value), e.matters ? "" : " (within noise)");
  }
  return e;
}

// The values with the least and the greatest mean, seen in order (the
// first of equal means wins each): param_effects()'s choice, and
// FamilyFit's scan that must choose as it does.
struct MeanExtremes {
  std::string v_lo, v_hi;
  double m_lo = std::numeric_limits<double>::infinity();
  double m_hi = -std::numeric_limits<double>::infinity();
  void see(const std::string& v, double mean) {
    if (mean < m_lo) {
      m_lo = mean;
      v_lo = v;
    }
    if (mean > m_hi) {
      m_hi = mean;
      v_hi = v;
    }
  }
};

}  // namespace

std::string_view to_string(Quantity q) {
  switch (q) {
    case Quantity::kMemory:
      return "peak memory";
    case Quantity::kSmActivity:
      return "SM activity";
    case Quantity::kRate:
      return "solo rate";
  }
  return "";
}

bool presumed_to_matter(std::string_view param) {
  static constexpr std::string_view kSizeWords[] = {
      "batch",      "batchsize", "bs",     "mbs",  "microbatch", "size",     "res",
      "resolution", "px",        "pixels", "img",  "image",      "imgsize",  "imgsz",
      "crop",       "len",       "length", "seq",  "width",      "depth",    "dim",
      "hidden",     "layers",    "model",  "arch", "tokens",     "channels", "heads"};
  std::string word;
  auto is_size_word = [&] {
    return std::find(std::begin(kSizeWords), std::end(kSizeWords), word) != std::end(kSizeWords);
  };
  for (char c : param) {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      continue;
    }
    if (is_size_word()) return true;
    word.clear();
  }
  return is_size_word();
}

std::vector<ParamEffect> param_effects(const std::vector<FamilyInstance>& instances, Quantity q,
                                       const std::vector<std::string>& params,
                                       const std::optional<std::vector<std::string>>& declared) {
  std::vector<ParamEffect> out;
  if (declared) {
    for (const std::string& p : params) {
      ParamEffect e{p, 1, false, false, "not in resource_params"};
      for (const std::string& entry : *declared) {
        Resource r = parse_resource(entry);
        if (r.name == p) e = {p, r.power, true, false, "stated in resource_params"};
      }
      out.push_back(e);
    }
    return out;
  }
  const Getter get = getter_of(q);
  for (const std::string& p : params) {
    // Instances alike in every other parameter, grouped; within a group the
    // most different pair decides.
    std::map<std::string, std::vector<const FamilyInstance*>> groups;
    for (const FamilyInstance& i : instances) {
      if (!get(i.measured)) continue;
      std::string key;
      for (const auto& [name, value] : i.params) {
        if (name != p) key += name + "=" + value + "\x1f";
      }
      groups[key].push_back(&i);
    }
    const FamilyInstance* lo = nullptr;
    const FamilyInstance* hi = nullptr;
    double lo_value = 0;
    double hi_value = 0;
    double widest = -1;
    for (const auto& [key, members] : groups) {
      // The mean of each value of p (repeats of one value are averaged).
      std::map<std::string, std::pair<double, int>> by_value;
      std::map<std::string, const FamilyInstance*> first;
      for (const FamilyInstance* m : members) {
        const std::string v = value_in(m->params, p);
        by_value[v].first += *get(m->measured);
        by_value[v].second += 1;
        first.emplace(v, m);
      }
      if (by_value.size() < 2) continue;
      MeanExtremes ext;
      for (const auto& [v, sum] : by_value) ext.see(v, sum.first / sum.second);
      auto& [v_lo, v_hi, m_lo, m_hi] = ext;
      if (v_lo == v_hi) v_hi = std::next(by_value.begin())->first;  // all equal
      const double relative = (m_hi - m_lo) / std::max(std::abs(m_hi), 1e-9);
      if (relative > widest) {
        widest = relative;
        lo = first[v_lo];
        hi = first[v_hi];
        lo_value = m_lo;
        hi_value = by_value[v_hi].first / by_value[v_hi].second;
      }
    }
    out.push_back(effect_of(q, p, {lo, hi, lo_value, hi_value, widest}));
  }
  return out;
}

namespace {

// param_effects(), from `memo` when it has them.
const std::vector<ParamEffect>& effects_of(const std::vector<FamilyInstance>& instances, Quantity q,
                                           const std::vector<std::string>& names,
                                           const std::optional<std::vector<std::string>>& declared,
                                           EffectsMemo& memo) {
  auto [it, added] = memo.try_emplace({q, names});
  if (added) it->second = param_effects(instances, q, names, declared);
  return it->second;
}

}  // namespace

namespace {

// The getters an estimate reads: each quantity's, and GPU utilisation (fitted
// as SM activity is: its noise and its parameters' effects).
enum Field { kMemoryField, kSmField, kUtilField, kRateField, kFields };

Quantity quantity_of(int field) {
  return field == kMemoryField ? Quantity::kMemory
         : field == kRateField ? Quantity::kRate
                               : Quantity::kSmActivity;
}

std::optional<double> field_value(int field, const JobProfile& p) {
  switch (field) {
    case kMemoryField:
      if (!p.peak_memory_bytes) return std::nullopt;
      return static_cast<double>(*p.peak_memory_bytes);
    case kSmField:
      return p.sm_active_pct;
    case kUtilField:
      return p.gpu_util_pct;
    default:
      return p.samples_per_s;
  }
}

Getter field_getter(int field) {
  return [field](const JobProfile& p) { return field_value(field, p); };
}

// estimate_from_family() given how each field is fitted and the instance
// whose time is scaled (nullptr: none).
FamilyEstimate estimate_with(const std::function<Fitted(int)>& fit,
                             const std::function<const FamilyInstance*()>& timed_instance) {
  Fitted memory = fit(kMemoryField);
  if (!memory.estimate) return {std::nullopt, "peak memory: " + memory.missing};
  Fitted sm = fit(kSmField);
  if (!sm.estimate) return {std::nullopt, "SM activity: " + sm.missing};
  Fitted util = fit(kUtilField);
  Fitted rate = fit(kRateField);

  JobProfile p;
  p.peak_memory_bytes = static_cast<uint64_t>(memory.estimate->value);
  p.memory_uncertainty = memory.estimate->uncertainty;
  p.sm_active_pct = std::clamp(sm.estimate->value, 1.0, 100.0);
  p.sm_uncertainty = sm.estimate->uncertainty;
  if (util.estimate) p.gpu_util_pct = std::clamp(util.estimate->value, 1.0, 100.0);
  if (rate.estimate) {
    p.samples_per_s = rate.estimate->value;
    p.rate_uncertainty = rate.estimate->uncertainty;
  }
  // Time: the nearest sibling's start-up, and its work at the estimated rate.
  const FamilyInstance* timed = timed_instance();
  if (timed != nullptr) {
    const JobProfile& t = timed->measured;
    const double scale = t.samples_per_s && p.samples_per_s && *p.samples_per_s > 0
                             ? *t.samples_per_s / *p.samples_per_s
                             : 1.0;
    const int64_t startup = std::min(*t.solo_ms, t.startup_ms.value_or(0));
    p.startup_ms = t.startup_ms;
    p.solo_ms = startup + static_cast<int64_t>(static_cast<double>(*t.solo_ms - startup) * scale);
    if (t.epoch_ms) p.epoch_ms = *t.epoch_ms * scale;
  }
  const std::string& basis = memory.estimate->basis;
  if (sm.estimate->basis == basis && (!rate.estimate || rate.estimate->basis == basis)) {
    p.source = "from " + basis;
  } else {
    p.source = fmt::format("memory from {}; SM activity from {}", basis, sm.estimate->basis);
    if (rate.estimate) p.source += "; rate from " + rate.estimate->basis;
  }
  return {p, ""};
}

bool has_solo(const JobProfile& m) { return m.solo_ms.has_value(); }

}  // namespace

FamilyEstimate estimate_from_family(const std::vector<FamilyInstance>& instances,
                                    const std::map<std::string, std::string>& params,
                                    const std::optional<std::vector<std::string>>& declared,
                                    EffectsMemo* memo) {
  if (instances.empty()) return {std::nullopt, "no measured instance yet"};
  const std::vector<std::string> names = all_params(instances, params);
  EffectsMemo own;
  EffectsMemo& effects = memo != nullptr ? *memo : own;
  return estimate_with(
      [&](int field) {
        const Quantity q = quantity_of(field);
        return fit_quantity(instances, q, field_getter(field), params,
                            effects_of(instances, q, names, declared, effects));
      },
      [&] { return nearest(instances, params, has_solo); });
}

double probe_value(const std::vector<FamilyInstance>& instances,
                   const std::map<std::string, std::string>& params,
                   const std::optional<std::vector<std::string>>& declared, EffectsMemo* memo) {
  const std::vector<std::string> names = all_params(instances, params);
  EffectsMemo own;
  EffectsMemo& effects = memo != nullptr ? *memo : own;
  double value = 0;
  for (Quantity q : {Quantity::kMemory, Quantity::kSmActivity}) {
    const Getter get = getter_of(q);
    Basis b = basis_for(instances, get, params, effects_of(instances, q, names, declared, effects));
    if (b.candidates.empty()) return std::numeric_limits<double>::infinity();
    if (b.numeric.empty()) continue;
    const double xt = feature(params, b.numeric);
    double closest = std::numeric_limits<double>::infinity();
    for (const FamilyInstance* i : b.candidates) {
      const double x = feature(i->params, b.numeric);
      const double d = x > 0 && xt > 0 ? std::abs(std::log(xt) - std::log(x))
                                       : std::abs(xt - x) / std::max(std::abs(x), 1.0);
      closest = std::min(closest, d);
    }
    value += closest;
  }
  return value;
}

// FamilyFit ----------------------------------------------------------------

namespace {

// `params`' values of `names`, in that order ("" where it has none).
std::vector<std::string> project(const std::map<std::string, std::string>& params,
                                 const std::vector<std::string>& names) {
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const std::string& n : names) out.push_back(value_in(params, n));
  return out;
}

// param_effects()'s key of an instance's group for `p`.
std::string group_key(const std::map<std::string, std::string>& params, const std::string& p) {
  std::string key;
  for (const auto& [name, value] : params) {
    if (name != p) key += name + "=" + value + "\x1f";
  }
  return key;
}

// `values` joined by a separator no parameter value holds, but the one at
// `skip`.
std::string joined(const std::vector<std::string>& values, size_t skip = SIZE_MAX) {
  std::string out;
  for (size_t k = 0; k < values.size(); ++k) {
    if (k == skip) continue;
    out += values[k];
    out += '\x1f';
  }
  return out;
}

void insert_sorted(std::vector<size_t>& v, size_t i) {
  v.insert(std::lower_bound(v.begin(), v.end(), i), i);
}

void erase_sorted(std::vector<size_t>& v, size_t i) {
  auto it = std::lower_bound(v.begin(), v.end(), i);
  if (it != v.end() && *it == i) v.erase(it);
}

}  // namespace

struct FamilyFit::Index {
  // Every parameter an instance names, sorted; whether every instance names
  // the same ones (else the free functions answer).
  std::vector<std::string> names;
  bool uniform = true;
  // Per field: instances with a value.
  std::array<size_t, kFields> measured{};
  // Per field and parameter: instances with a value whose value of the
  // parameter is not a number.
  std::array<std::map<std::string, size_t>, kFields> non_numeric;

  // Per field (of a quantity) and parameter: param_effects()'s groups, each
  // value's instances in order, and the group's widest pair once computed;
  // the groups with two values ranked as param_effects() chooses (the
  // widest, the first by key among equals); the groups changed since.
  // Within a group, each value's sum (in its instances' order, as the loop
  // it replaces) and mean are kept, the means ordered, so that a measurement
  // costs the value it changes, not a pass over the group's values (a
  // sweep's seeds are thousands).
  struct Value {
    std::vector<size_t> members;
    double sum = 0;                // of members' values, in order; stale while `dirty`
    bool dirty = false;            // summed again when next asked
    bool listed = false;           // in its group's `changed_values`
    std::optional<double> ranked;  // its mean, as in its group's `means`
  };
  using Values = std::map<std::string, Value>;
  // Values by (mean, value): the first is the least mean, the first by value
  // among equals (the scan's choice); a null value sorts before all.
  struct ByMean {
    bool operator()(const std::pair<double, const std::string*>& a,
                    const std::pair<double, const std::string*>& b) const {
      if (a.first != b.first) return a.first < b.first;
      if (a.second == nullptr || b.second == nullptr)
        return a.second == nullptr && b.second != nullptr;
      return *a.second < *b.second;
    }
  };
  struct Group {
    Values by_value;
    std::set<std::pair<double, const std::string*>, ByMean> means;  // values with members
    size_t odd_means = 0;  // values whose mean is not finite: the scan decides
    std::vector<Values::iterator> changed_values;
    bool valid = false;
    bool two_values = false;
    size_t lo = 0, hi = 0;
    double lo_value = 0, hi_value = 0, relative = 0;
    std::optional<double> ranked;  // its relative in `ranked`
  };
  struct Groups {
    std::map<std::string, Group> by_key;
    std::set<std::pair<double, std::string>> ranked;  // (-relative, key)
    std::vector<std::map<std::string, Group>::iterator> changed;
    // The last effect made (effect_of(), which formats its reason) and the
    // widest pair it was made of: instance indices (their names never
    // change) and the values as bits. The same pair, the same effect.
    struct Made {
      bool any = false;
      size_t lo = 0, hi = 0;
      uint64_t lo_value = 0, hi_value = 0, relative = 0;
      bool operator==(const Made&) const = default;
    };
    std::optional<std::pair<Made, ParamEffect>> last;
  };
  std::map<std::pair<int, std::string>, Groups> groups;

  // Per field and categorical parameters that matter, per their values: the
  // instances with a value that have them, in order, and their extremes, sum
  // (in that order) and largest rate uncertainty; `dirty` until recomputed.
  struct Aggregate {
    std::vector<size_t> members;
    double lo = 0, hi = 0, sum = 0, uncertainty = 0;
    bool dirty = true;
    // What it estimates, once asked: [1] for the one instance it holds,
    // itself (its own measurement), [0] otherwise.
    std::optional<Fitted> fitted[2];
  };
  std::map<std::pair<int, std::vector<std::string>>, std::map<std::vector<std::string>, Aggregate>>
      aggregates;

  // The timed instances (a solo time measured); the first with each set of
  // values (in `names` order), and with each set but the one at a position;
  // valid while `timed_valid`.
  bool timed_valid = false;
  std::vector<size_t> timed;  // their indices, in order
  // Each one's values (in `names` order), as `timed`: the scan for the
  // nearest reads them without projecting each instance again.
  std::vector<std::vector<std::string>> timed_values;
  std::unordered_map<std::string, size_t> timed_exact;                 // by joined()
  std::vector<std::unordered_map<std::string, size_t>> timed_but_one;  // by joined(, k)
  // The timed instances' indices in the order they were timed (a
  // FamilyPoint has seen a prefix of them), and the epoch of that order:
  // bumped whenever the timed instances are found afresh (one lost its
  // time), when every FamilyPoint starts again.
  std::vector<size_t> timed_log;
  uint64_t timed_epoch = 1;

  // Bumped by each change to the instances.
  uint64_t generation = 0;
  // Per quantity: effects() of `names` as of `generation` and `declared`.
  struct Effects {
    uint64_t generation = UINT64_MAX;
    std::optional<std::vector<std::string>> declared;
    std::vector<ParamEffect> effects;
    bool any_matters = false;  // whether one of `effects` matters
  };
  std::array<Effects, 3> effects;
  // Per field: the aggregate when no categorical parameter matters.
  std::array<Aggregate*, kFields> uncategorised{};

  // estimate()'s answers while `generation` and `declared` are these, by
  // what they were made of: each field's Fitted (its aggregate's, whose
  // address names it until the instances change) and what estimate_with()
  // reads of the timed instance (its rate as bits, solo time, start-up and
  // epoch time as bits). The points of a sweep share a few such answers;
  // each is made once.
  struct Made {
    std::array<const Fitted*, kFields> fitted{};
    bool timed = false;
    std::optional<uint64_t> rate_bits;
    int64_t solo_ms = 0;
    std::optional<int64_t> startup_ms;
    std::optional<uint64_t> epoch_bits;
    // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy sees a 0 in the defaulted comparison
    auto operator<=>(const Made&) const = default;
  };
  struct Answers {
    uint64_t generation = UINT64_MAX;
    std::optional<std::vector<std::string>> declared;
    std::map<Made, std::shared_ptr<const FamilyEstimate>> by_made;
  };
  Answers answers;

  // estimate()'s answers for kept points (FamilyPoint) by their timed
  // sibling's index (SIZE_MAX: none), while `generation` and `declared` are
  // these and `applies`: every measured field is fitted from all its
  // instances, two or more (no parameter matters for its quantity, so no
  // point is its own measurement), so that points differ by their timed
  // sibling alone. One lookup instead of each field's.
  struct BySibling {
    uint64_t generation = UINT64_MAX;
    std::optional<std::vector<std::string>> declared;
    bool applies = false;
    std::unordered_map<size_t, std::shared_ptr<const FamilyEstimate>> answers;
  };
  BySibling by_sibling;
};

namespace {

// Instance `index`, timed, with `values`: the first such (the least index)
// at its values and at its values but each one.
void add_timed(FamilyFit::Index& x, std::vector<std::string> values, size_t index) {
  auto keep_first = [index](std::unordered_map<std::string, size_t>& m, std::string key) {
    auto [it, added] = m.try_emplace(std::move(key), index);
    if (!added) it->second = std::min(it->second, index);
  };
  keep_first(x.timed_exact, joined(values));
  for (size_t k = 0; k < values.size(); ++k) keep_first(x.timed_but_one[k], joined(values, k));
  const auto at = std::lower_bound(x.timed.begin(), x.timed.end(), index) - x.timed.begin();
  x.timed.insert(x.timed.begin() + at, index);
  x.timed_values.insert(x.timed_values.begin() + at, std::move(values));
  x.timed_log.push_back(index);
}

}  // namespace

FamilyFit::FamilyFit() : index_(std::make_unique<Index>()) {}
FamilyFit::~FamilyFit() = default;
FamilyFit::FamilyFit(FamilyFit&&) noexcept = default;
FamilyFit& FamilyFit::operator=(FamilyFit&&) noexcept = default;

size_t FamilyFit::add(FamilyInstance instance) {
  Index& x = *index_;
  std::vector<std::string> names;
  for (const auto& [name, value] : instance.params) names.push_back(name);
  if (instances_.empty()) {
    x.names = names;
  } else if (names != x.names) {
    x.uniform = false;
  }
  instances_.push_back(std::move(instance));
  changed(instances_.size() - 1, nullptr);
  return instances_.size() - 1;
}

void FamilyFit::remeasure(size_t index, JobProfile measured) {
  JobProfile before = std::move(instances_[index].measured);
  instances_[index].measured = std::move(measured);
  changed(index, &before);
}

void FamilyFit::changed(size_t index, const JobProfile* before) {
  Index& x = *index_;
  ++x.generation;
  const FamilyInstance& inst = instances_[index];
  for (int f = 0; f < kFields; ++f) {
    const std::optional<double> was = before ? field_value(f, *before) : std::nullopt;
    const std::optional<double> now = field_value(f, inst.measured);
    const bool uncertainty_changed =
        f == kRateField && before && before->rate_uncertainty != inst.measured.rate_uncertainty;
    if (was.has_value() == now.has_value() && (!was || *was == *now) && !uncertainty_changed)
      continue;
    const bool presence = was.has_value() != now.has_value();
    if (presence) {
      const int step = now ? 1 : -1;
      x.measured[f] += step;
      for (auto& [param, count] : x.non_numeric[f]) {
        if (!number(value_in(inst.params, param))) count += step;
      }
    }
    for (auto& [key, groups] : x.groups) {
      if (key.first != f) continue;
      auto [g_it, new_group] = groups.by_key.try_emplace(group_key(inst.params, key.second));
      Index::Group& g = g_it->second;
      if (g.valid || new_group) groups.changed.push_back(g_it);  // else listed already
      g.valid = false;
      auto v_it = g.by_value.try_emplace(value_in(inst.params, key.second)).first;
      Index::Value& v = v_it->second;
      if (!v.listed) g.changed_values.push_back(v_it);
      v.listed = true;
      if (presence && now && !v.dirty && (v.members.empty() || v.members.back() < index)) {
        // Appended in order: the sum goes on as a loop over members would.
        v.sum = v.members.empty() ? 0.0 + *now : v.sum + *now;
        v.members.push_back(index);
        continue;
      }
      v.dirty = true;
      if (!presence) continue;
      if (now) {
        insert_sorted(v.members, index);
      } else {
        erase_sorted(v.members, index);
      }
    }
    for (auto& [key, by_values] : x.aggregates) {
      if (key.first != f) continue;
      auto a = by_values.find(project(inst.params, key.second));
      if (a == by_values.end()) continue;
      Index::Aggregate& agg = a->second;
      agg.fitted[0].reset();
      agg.fitted[1].reset();
      if (presence && now && !agg.dirty && (agg.members.empty() || agg.members.back() < index)) {
        // Appended in order: the sum goes on as a loop over members would.
        const double v = *now;
        agg.lo = agg.members.empty() ? v : std::min(agg.lo, v);
        agg.hi = agg.members.empty() ? v : std::max(agg.hi, v);
        agg.sum += v;
        agg.uncertainty = std::max(agg.uncertainty, input_uncertainty(quantity_of(f), inst));
        agg.members.push_back(index);
        continue;
      }
      agg.dirty = true;
      if (!presence) continue;
      if (now) {
        insert_sorted(agg.members, index);
      } else {
        erase_sorted(agg.members, index);
      }
    }
  }
  if (x.timed_valid && x.uniform) {
    const bool was_timed = before && before->solo_ms;
    const bool timed = inst.measured.solo_ms.has_value();
    if (was_timed && !timed) {
      x.timed_valid = false;
    } else if (timed && !was_timed) {
      add_timed(x, project(inst.params, x.names), index);
    }
  }
}

namespace {

// The state FamilyFit's answers read, brought up to date (const callers:
// the index is a cache of instances()).
struct FitView {
  const std::vector<FamilyInstance>& instances;
  FamilyFit::Index& x;

  size_t non_numeric(int f, const std::string& param) {
    auto [it, added] = x.non_numeric[f].try_emplace(param, 0);
    if (added) {
      for (const FamilyInstance& i : instances) {
        if (field_value(f, i.measured) && !number(value_in(i.params, param))) ++it->second;
      }
    }
    return it->second;
  }

  FamilyFit::Index::Aggregate& aggregate(int f, const std::vector<std::string>& categorical,
                                         const std::vector<std::string>& values) {
    auto [by_values_it, added_names] = x.aggregates.try_emplace({f, categorical});
    auto [it, added] = by_values_it->second.try_emplace(values);
    FamilyFit::Index::Aggregate& a = it->second;
    if (added) {
      for (size_t k = 0; k < instances.size(); ++k) {
        if (field_value(f, instances[k].measured) &&
            project(instances[k].params, categorical) == values)
          a.members.push_back(k);
      }
    }
    return refresh(a, f);
  }

  FamilyFit::Index::Aggregate& refresh(FamilyFit::Index::Aggregate& a, int f) {
    if (a.dirty) {
      a.lo = std::numeric_limits<double>::infinity();
      a.hi = -a.lo;
      a.sum = 0;
      a.uncertainty = 0;
      for (size_t k : a.members) {
        const double v = *field_value(f, instances[k].measured);
        a.lo = std::min(a.lo, v);
        a.hi = std::max(a.hi, v);
        a.sum += v;
        a.uncertainty = std::max(a.uncertainty, input_uncertainty(quantity_of(f), instances[k]));
      }
      a.dirty = false;
    }
    return a;
  }

  // param_effects() of every parameter on `q`, kept while the instances
  // and `declared` stay as they are.
  const std::vector<ParamEffect>& effects(Quantity q,
                                          const std::optional<std::vector<std::string>>& declared) {
    FamilyFit::Index::Effects& e = x.effects[static_cast<size_t>(q)];
    if (e.generation != x.generation || e.declared != declared) {
      e.effects.clear();
      if (declared) {
        e.effects = param_effects(instances, q, x.names, declared);
      } else {
        for (const std::string& p : x.names) e.effects.push_back(effect(q, p));
      }
      e.generation = x.generation;
      e.declared = declared;
      e.any_matters = std::any_of(e.effects.begin(), e.effects.end(),
                                  [](const ParamEffect& p) { return p.matters; });
    }
    return e.effects;
  }

  // A group's widest pair from its ordered means (all finite): the least
  // mean and the greatest, each the first by value among equals; when they
  // are one value (all equal), the second value.
  static void rank(FamilyFit::Index::Group& g) {
    g.two_values = g.means.size() >= 2;
    if (!g.two_values) return;
    const auto& [m_lo, v_lo] = *g.means.begin();
    const double m_hi = g.means.rbegin()->first;
    const std::string* v_hi = g.means.lower_bound({m_hi, nullptr})->second;
    if (v_hi == v_lo) {  // all equal: the second value
      auto it = g.by_value.begin();
      while (it->second.members.empty()) ++it;
      ++it;
      while (it->second.members.empty()) ++it;
      v_hi = &it->first;
    }
    const FamilyFit::Index::Value& hi = g.by_value.at(*v_hi);
    g.lo = g.by_value.at(*v_lo).members.front();
    g.hi = hi.members.front();
    g.lo_value = m_lo;
    g.hi_value = *hi.ranked;
    g.relative = (m_hi - m_lo) / std::max(std::abs(m_hi), 1e-9);
  }

  // The same by a scan of the group's values in order (a mean is not
  // finite, where the ordered means would not choose as it does).
  void rank_by_scan(FamilyFit::Index::Group& g, int f) {
    size_t values = 0;
    MeanExtremes ext;
    for (const auto& [v, value] : g.by_value) {
      if (value.members.empty()) continue;
      ++values;
      ext.see(v, *value.ranked);
    }
    auto& [v_lo, v_hi, m_lo, m_hi] = ext;
    g.two_values = values >= 2;
    if (!g.two_values) return;
    if (v_lo == v_hi) {  // all equal: the second value
      auto it = g.by_value.begin();
      while (it->second.members.empty()) ++it;
      ++it;
      while (it->second.members.empty()) ++it;
      v_hi = it->first;
    }
    const std::vector<size_t>& hi_members = g.by_value.at(v_hi).members;
    double hi_sum = 0;
    for (size_t k : hi_members) hi_sum += *field_value(f, instances[k].measured);
    g.lo = g.by_value.at(v_lo).members.front();
    g.hi = hi_members.front();
    g.lo_value = m_lo;
    g.hi_value = hi_sum / static_cast<int>(hi_members.size());
    g.relative = (m_hi - m_lo) / std::max(std::abs(m_hi), 1e-9);
  }

  // param_effects() for one parameter, from its groups.
  ParamEffect effect(Quantity q, const std::string& p) {
    const int f = q == Quantity::kMemory ? kMemoryField
                  : q == Quantity::kRate ? kRateField
                                         : kSmField;
    auto [groups_it, added] = x.groups.try_emplace({f, p});
    FamilyFit::Index::Groups& groups = groups_it->second;
    if (added) {
      for (size_t k = 0; k < instances.size(); ++k) {
        const FamilyInstance& i = instances[k];
        if (!field_value(f, i.measured)) continue;
        groups.by_key[group_key(i.params, p)].by_value[value_in(i.params, p)].members.push_back(k);
      }
      for (auto it = groups.by_key.begin(); it != groups.by_key.end(); ++it) {
        groups.changed.push_back(it);
        for (auto v = it->second.by_value.begin(); v != it->second.by_value.end(); ++v) {
          v->second.dirty = true;
          v->second.listed = true;
          it->second.changed_values.push_back(v);
        }
      }
    }
    for (auto it : groups.changed) {
      const std::string& key = it->first;
      FamilyFit::Index::Group& g = it->second;
      if (g.valid) continue;  // listed twice
      g.valid = true;
      if (g.ranked) groups.ranked.erase({-*g.ranked, key});
      g.ranked.reset();
      for (auto v_it : g.changed_values) {
        FamilyFit::Index::Value& v = v_it->second;
        v.listed = false;
        if (v.dirty) {
          v.sum = 0;
          for (size_t k : v.members) v.sum += *field_value(f, instances[k].measured);
          v.dirty = false;
        }
        if (v.ranked) {
          if (std::isfinite(*v.ranked)) {
            g.means.erase({*v.ranked, &v_it->first});
          } else {
            --g.odd_means;
          }
        }
        v.ranked.reset();
        if (v.members.empty()) continue;
        v.ranked = v.sum / static_cast<int>(v.members.size());
        if (std::isfinite(*v.ranked)) {
          g.means.insert({*v.ranked, &v_it->first});
        } else {
          ++g.odd_means;
        }
      }
      g.changed_values.clear();
      if (g.odd_means > 0) {
        rank_by_scan(g, f);
      } else {
        rank(g);
      }
      if (g.two_values) {
        groups.ranked.insert({-g.relative, key});
        g.ranked = g.relative;
      }
    }
    groups.changed.clear();
    Widest w;
    FamilyFit::Index::Groups::Made made;
    if (!groups.ranked.empty()) {
      const FamilyFit::Index::Group& g = groups.by_key.at(groups.ranked.begin()->second);
      w = {&instances[g.lo], &instances[g.hi], g.lo_value, g.hi_value, g.relative};
      made = {true,
              g.lo,
              g.hi,
              std::bit_cast<uint64_t>(g.lo_value),
              std::bit_cast<uint64_t>(g.hi_value),
              std::bit_cast<uint64_t>(g.relative)};
    }
    if (groups.last && groups.last->first == made) return groups.last->second;
    groups.last.emplace(made, effect_of(q, p, w));
    return groups.last->second;
  }

  // The timed instances, found afresh when they are not valid.
  void refresh_timed() {
    if (x.timed_valid) return;
    x.timed.clear();
    x.timed_values.clear();
    x.timed_exact.clear();
    x.timed_but_one.assign(x.names.size(), {});
    x.timed_log.clear();
    ++x.timed_epoch;
    for (size_t k = 0; k < instances.size(); ++k) {
      if (!instances[k].measured.solo_ms) continue;
      add_timed(x, project(instances[k].params, x.names), k);
    }
    x.timed_valid = true;
  }

  // nearest() over the timed instances: the fewest differing values, the
  // first by index among those.
  const FamilyInstance* timed(const std::map<std::string, std::string>& target) {
    refresh_timed();
    return timed_of(project(target, x.names));
  }

  // The values (in `names` order) of timed instance `index`.
  const std::vector<std::string>& timed_values_of(size_t index) const {
    const auto at = std::lower_bound(x.timed.begin(), x.timed.end(), index) - x.timed.begin();
    return x.timed_values[static_cast<size_t>(at)];
  }

  static size_t differing(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    size_t diff = 0;
    for (size_t j = 0; j < a.size(); ++j) diff += a[j] != b[j] ? 1 : 0;
    return diff;
  }

  // timed(target), kept in `point` (FamilyPoint): found afresh in a new
  // epoch, else moved by the instances timed since it last looked.
  const FamilyInstance* timed(const std::map<std::string, std::string>& target,
                              FamilyPoint& point) {
    refresh_timed();
    if (point.epoch != x.timed_epoch) {
      point.values = project(target, x.names);
      const FamilyInstance* found = timed_of(point.values);
      point.sibling.reset();
      point.sibling_diff = 0;
      if (found != nullptr) {
        point.sibling = static_cast<size_t>(found - instances.data());
        point.sibling_diff = differing(point.values, timed_values_of(*point.sibling));
      }
      point.timed_seen = x.timed_log.size();
      point.epoch = x.timed_epoch;
    }
    for (; point.timed_seen < x.timed_log.size(); ++point.timed_seen) {
      const size_t k = x.timed_log[point.timed_seen];
      const size_t diff = differing(point.values, timed_values_of(k));
      if (!point.sibling || diff < point.sibling_diff ||
          (diff == point.sibling_diff && k < *point.sibling)) {
        point.sibling = k;
        point.sibling_diff = diff;
      }
    }
    return point.sibling ? &instances[*point.sibling] : nullptr;
  }

  // timed() of a target's values (in `names` order), by the kept maps.
  const FamilyInstance* timed_of(const std::vector<std::string>& values) {
    if (x.timed.empty()) return nullptr;
    if (auto it = x.timed_exact.find(joined(values)); it != x.timed_exact.end())
      return &instances[it->second];
    std::optional<size_t> best;
    for (size_t j = 0; j < values.size(); ++j) {
      if (auto it = x.timed_but_one[j].find(joined(values, j)); it != x.timed_but_one[j].end())
        best = std::min(best.value_or(it->second), it->second);
    }
    if (best) return &instances[*best];
    // Two or more differ: nearest()'s scan, over the timed instances alone.
    const FamilyInstance* found = nullptr;
    size_t found_diff = 0;
    for (size_t i = 0; i < x.timed.size(); ++i) {
      const std::vector<std::string>& other = x.timed_values[i];
      size_t diff = 0;
      for (size_t j = 0; j < values.size(); ++j) diff += other[j] != values[j] ? 1 : 0;
      if (found == nullptr || diff < found_diff) {
        found = &instances[x.timed[i]];
        found_diff = diff;
      }
    }
    return found;
  }

  // The categorical parameters that matter for `f` (basis_for()); nullopt
  // when a numeric one matters (a fit along a line: the free functions).
  std::optional<std::vector<std::string>> categorical(
      int f, const std::map<std::string, std::string>& target,
      const std::vector<ParamEffect>& effects) {
    std::vector<std::string> out;
    for (const ParamEffect& e : effects) {
      if (!e.matters) continue;
      if (number(value_in(target, e.param)) && non_numeric(f, e.param) == 0) return std::nullopt;
      out.push_back(e.param);
    }
    return out;
  }
};

}  // namespace

std::vector<ParamEffect> FamilyFit::effects(
    Quantity q, const std::vector<std::string>& params,
    const std::optional<std::vector<std::string>>& declared) const {
  if (declared) return param_effects(instances_, q, params, declared);
  FitView view{instances_, *index_};
  std::vector<ParamEffect> out;
  for (const std::string& p : params) out.push_back(view.effect(q, p));
  return out;
}

namespace {

// fit_quantity()'s exact case from an aggregate: no numeric parameter
// matters, so every candidate is measured at the target's values.
Fitted fit_exact(const std::vector<FamilyInstance>& instances_, Quantity q,
                 const FamilyFit::Index::Aggregate& a,
                 const std::map<std::string, std::string>& params,
                 const std::vector<std::string>& categorical) {
  if (a.members.empty()) {
    std::string which;
    for (const std::string& p : categorical)
      which += fmt::format("{}{}={}", which.empty() ? "" : ",", p, value_in(params, p));
    return {std::nullopt, fmt::format("no measured instance with {}", which)};
  }
  QuantityEstimate est;
  est.value = q == Quantity::kMemory ? a.hi : a.sum / static_cast<double>(a.members.size());
  est.uncertainty = est.value > 0 ? (a.hi - a.lo) / est.value : 0;
  est.uncertainty = std::max(est.uncertainty, a.uncertainty);
  const FamilyInstance& first = instances_[a.members.front()];
  if (a.members.size() == 1 && first.params == params) {
    est.basis = "its own measurement";
  } else if (a.members.size() == 1) {
    est.basis = "sibling " + first.name;
  } else {
    std::vector<const FamilyInstance*> named;  // list_names() reads the first few
    for (size_t k = 0; k < a.members.size() && k < kNamedInstances; ++k)
      named.push_back(&instances_[a.members[k]]);
    std::string list = list_names(named);
    if (a.members.size() > kNamedInstances)
      list += fmt::format(" and {} more", a.members.size() - kNamedInstances);
    est.basis = fmt::format("{} siblings ({})", a.members.size(), list);
  }
  return {est, ""};
}

}  // namespace

FamilyEstimate FamilyFit::estimate(const std::map<std::string, std::string>& params,
                                   const std::optional<std::vector<std::string>>& declared,
                                   EffectsMemo* memo, FamilyPoint* point) const {
  return *shared_estimate(params, declared, memo, point);
}

std::shared_ptr<const FamilyEstimate> FamilyFit::shared_estimate(
    const std::map<std::string, std::string>& params,
    const std::optional<std::vector<std::string>>& declared, EffectsMemo* memo,
    FamilyPoint* point) const {
  if (instances_.empty())
    return std::make_shared<const FamilyEstimate>(
        FamilyEstimate{std::nullopt, "no measured instance yet"});
  // The names of `params` are the family's (fixed by its first instance), as
  // the point found once.
  auto names_match = [&] {
    return params.size() == index_->names.size() &&
           std::equal(
               params.begin(), params.end(), index_->names.begin(),
               [](const auto& entry, const std::string& name) { return entry.first == name; });
  };
  bool same_names = index_->uniform;
  if (same_names && point != nullptr) {
    if (point->names_match == 0) point->names_match = names_match() ? 1 : -1;
    same_names = point->names_match > 0;
  } else if (same_names) {
    same_names = names_match();
  }
  if (!same_names)
    return std::make_shared<const FamilyEstimate>(
        estimate_from_family(instances_, params, declared, memo));
  if (point == nullptr) return kept_estimate(params, declared, point);
  FitView view{instances_, *index_};
  Index::BySibling& by_sibling = index_->by_sibling;
  if (by_sibling.generation != index_->generation || by_sibling.declared != declared) {
    by_sibling.answers.clear();
    by_sibling.generation = index_->generation;
    by_sibling.declared = declared;
    by_sibling.applies = true;
    for (int f = 0; f < kFields; ++f) {
      const Quantity q = quantity_of(f);
      view.effects(q, declared);
      const size_t measured = index_->measured[f];
      if (measured > 0 && (index_->effects[static_cast<size_t>(q)].any_matters || measured < 2))
        by_sibling.applies = false;
    }
  }
  if (!by_sibling.applies) return kept_estimate(params, declared, point);
  const FamilyInstance* timed = view.timed(params, *point);
  const size_t sibling =
      timed == nullptr ? SIZE_MAX : static_cast<size_t>(timed - instances_.data());
  auto [it, added] = by_sibling.answers.try_emplace(sibling);
  if (added) it->second = kept_estimate(params, declared, point);
  return it->second;
}

std::shared_ptr<const FamilyEstimate> FamilyFit::kept_estimate(
    const std::map<std::string, std::string>& params,
    const std::optional<std::vector<std::string>>& declared, FamilyPoint* point) const {
  FitView view{instances_, *index_};
  // What estimate_with() reads below, each field's Fitted kept in its
  // aggregate (nullptr where a fit along a line is made instead): the same
  // makings, the same answer.
  Index::Made made;
  bool kept = true;
  static const Fitted kUnmeasured{std::nullopt, "no measured instance yet"};
  // Field f's fit from the aggregate of the instances alike in `categorical`
  // (kept with the aggregate until it changes).
  auto exact_fitted = [&](int f, const std::vector<std::string>& categorical) -> const Fitted& {
    Index::Aggregate*& uncategorised = index_->uncategorised[f];
    if (categorical.empty() && uncategorised == nullptr) uncategorised = &view.aggregate(f, {}, {});
    Index::Aggregate& a = categorical.empty()
                              ? view.refresh(*uncategorised, f)
                              : view.aggregate(f, categorical, project(params, categorical));
    const FamilyInstance& first = instances_[a.members.empty() ? 0 : a.members.front()];
    std::optional<Fitted>& memo_fitted =
        a.fitted[a.members.size() == 1 && first.params == params ? 1 : 0];
    if (!memo_fitted) memo_fitted = fit_exact(instances_, quantity_of(f), a, params, categorical);
    return *memo_fitted;
  };
  auto timed_sibling = [&] {
    return point != nullptr ? view.timed(params, *point) : view.timed(params);
  };
  static const std::vector<std::string> kNoCategorical;
  auto kept_fitted = [&](int f) -> const Fitted* {
    const std::vector<ParamEffect>& e = view.effects(quantity_of(f), declared);
    if (view.x.measured[f] == 0) return &kUnmeasured;
    if (!view.x.effects[static_cast<size_t>(quantity_of(f))].any_matters)
      return &exact_fitted(f, kNoCategorical);  // categorical() would find none
    const std::optional<std::vector<std::string>> categorical = view.categorical(f, params, e);
    if (!categorical) return nullptr;
    return &exact_fitted(f, *categorical);
  };
  for (int f = 0; f < kFields && kept; ++f) {
    made.fitted[static_cast<size_t>(f)] = kept_fitted(f);
    kept = made.fitted[static_cast<size_t>(f)] != nullptr;
  }
  Index::Answers& answers = index_->answers;
  if (kept) {
    if (const FamilyInstance* timed = timed_sibling(); timed != nullptr) {
      const JobProfile& t = timed->measured;
      auto bits = [](const std::optional<double>& v) -> std::optional<uint64_t> {
        if (!v) return std::nullopt;
        return std::bit_cast<uint64_t>(*v);
      };
      made.timed = true;
      made.rate_bits = bits(t.samples_per_s);
      made.solo_ms = *t.solo_ms;
      made.startup_ms = t.startup_ms;
      made.epoch_bits = bits(t.epoch_ms);
    }
    if (answers.generation != index_->generation || answers.declared != declared) {
      answers.by_made.clear();
      answers.generation = index_->generation;
      answers.declared = declared;
    }
    if (auto it = answers.by_made.find(made); it != answers.by_made.end()) return it->second;
  }
  auto answer = std::make_shared<const FamilyEstimate>(estimate_with(
      [&](int f) -> Fitted {
        const Quantity q = quantity_of(f);
        const std::vector<ParamEffect>& e = view.effects(q, declared);
        if (view.x.measured[f] == 0) return kUnmeasured;
        const std::optional<std::vector<std::string>> categorical = view.categorical(f, params, e);
        if (!categorical) return fit_quantity(instances_, q, field_getter(f), params, e);
        return exact_fitted(f, *categorical);
      },
      [&] { return timed_sibling(); }));
  if (kept) answers.by_made.emplace(made, answer);
  return answer;
}

double FamilyFit::probe_value(const std::map<std::string, std::string>& params,
                              const std::optional<std::vector<std::string>>& declared,
                              EffectsMemo* memo) const {
  const bool same_names =
      !instances_.empty() && index_->uniform && params.size() == index_->names.size() &&
      std::equal(params.begin(), params.end(), index_->names.begin(),
                 [](const auto& entry, const std::string& name) { return entry.first == name; });
  if (!same_names) return colo::probe_value(instances_, params, declared, memo);
  FitView view{instances_, *index_};
  for (Quantity q : {Quantity::kMemory, Quantity::kSmActivity}) {
    const int f = q == Quantity::kMemory ? kMemoryField : kSmField;
    if (view.x.measured[f] == 0) return std::numeric_limits<double>::infinity();
    const std::optional<std::vector<std::string>> categorical =
        view.categorical(f, params, view.effects(q, declared));
    if (!categorical) return colo::probe_value(instances_, params, declared, memo);
    if (view.aggregate(f, *categorical, project(params, *categorical)).members.empty())
      return std::numeric_limits<double>::infinity();
  }
  return 0;  // no numeric parameter matters: nothing is far
}

size_t params_hash(const std::map<std::string, std::string>& params) {
  size_t h = params.size();
  const std::hash<std::string> hash;
  for (const auto& [name, value] : params) {
    // Each text hashed alone and mixed in (boost's hash_combine): ("a", "bc")
    // and ("ab", "c") differ.
    h ^= hash(name) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= hash(value) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return h;
}

std::string instance_label(std::string_view job_name) {
  size_t hash = job_name.rfind('#');
  if (hash == std::string_view::npos || hash + 1 == job_name.size()) return std::string(job_name);
  const bool digits =
      std::all_of(job_name.begin() + static_cast<std::ptrdiff_t>(hash) + 1, job_name.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  return std::string(digits ? job_name.substr(0, hash) : job_name);
}

}  // namespace colo
