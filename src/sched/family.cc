#include "sched/family.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <set>

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
  const Noise noise = noise_of(q);
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
      std::string v_lo, v_hi;
      double m_lo = std::numeric_limits<double>::infinity();
      double m_hi = -m_lo;
      for (const auto& [v, sum] : by_value) {
        const double mean = sum.first / sum.second;
        if (mean < m_lo) {
          m_lo = mean;
          v_lo = v;
        }
        if (mean > m_hi) {
          m_hi = mean;
          v_hi = v;
        }
      }
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
    ParamEffect e{p, 1, presumed_to_matter(p), false, ""};
    if (lo == nullptr) {
      e.reason = e.matters ? "presumed from its name (no two measured instances differ in it alone)"
                           : "presumed neutral (no two measured instances differ in it alone)";
    } else {
      e.measured = true;
      e.matters = widest > noise.relative && hi_value - lo_value > noise.absolute;
      e.reason =
          fmt::format("measured: {} {}, {} {}{}", lo->name, format_value(q, lo_value), hi->name,
                      format_value(q, hi_value), e.matters ? "" : " (within noise)");
    }
    out.push_back(std::move(e));
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

FamilyEstimate estimate_from_family(const std::vector<FamilyInstance>& instances,
                                    const std::map<std::string, std::string>& params,
                                    const std::optional<std::vector<std::string>>& declared,
                                    EffectsMemo* memo) {
  if (instances.empty()) return {std::nullopt, "no measured instance yet"};
  const std::vector<std::string> names = all_params(instances, params);
  EffectsMemo own;
  EffectsMemo& effects = memo != nullptr ? *memo : own;
  auto fit = [&](Quantity q, const Getter& get, Quantity effects_q) {
    return fit_quantity(instances, q, get, params,
                        effects_of(instances, effects_q, names, declared, effects));
  };
  Fitted memory = fit(Quantity::kMemory, getter_of(Quantity::kMemory), Quantity::kMemory);
  if (!memory.estimate) return {std::nullopt, "peak memory: " + memory.missing};
  Fitted sm = fit(Quantity::kSmActivity, getter_of(Quantity::kSmActivity), Quantity::kSmActivity);
  if (!sm.estimate) return {std::nullopt, "SM activity: " + sm.missing};
  Fitted util = fit(
      Quantity::kSmActivity, [](const JobProfile& p) { return p.gpu_util_pct; },
      Quantity::kSmActivity);
  Fitted rate = fit(Quantity::kRate, getter_of(Quantity::kRate), Quantity::kRate);

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
  const FamilyInstance* timed =
      nearest(instances, params, [](const JobProfile& m) { return m.solo_ms.has_value(); });
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

std::string instance_label(std::string_view job_name) {
  size_t hash = job_name.rfind('#');
  if (hash == std::string_view::npos || hash + 1 == job_name.size()) return std::string(job_name);
  const bool digits =
      std::all_of(job_name.begin() + static_cast<std::ptrdiff_t>(hash) + 1, job_name.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  return std::string(digits ? job_name.substr(0, hash) : job_name);
}

}  // namespace colo
