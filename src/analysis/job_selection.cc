#include "analysis/job_selection.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>

#include "analysis/training_metrics.h"
#include "common/text.h"

namespace colo {

namespace {

std::optional<double> as_number(std::string_view s) {
  s = trim_space(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// A job's value for `name`: text and, when it is one, a number; nullopt
// when the job has no such thing.
struct Value {
  std::string text;
  std::optional<double> number;
};

constexpr std::array<std::string_view, 6> kFields = {"name",   "state",      "gpu",
                                                     "epochs", "duration_s", "samples_per_s"};

// The metric a sort or filter key names, and whether the key means its
// last value: `loss` and `loss_best` its best, `loss_last` its last (the
// CSV's column names). {nullptr, false} when it names none.
std::pair<const MetricSeries*, bool> metric_of_key(const JobSummary& job, std::string_view key) {
  if (const MetricSeries* m = find_metric(job.metrics, key)) return {m, false};
  if (key.ends_with("_best") || key.ends_with("_last"))
    return {find_metric(job.metrics, key.substr(0, key.size() - 5)), key.ends_with("_last")};
  return {nullptr, false};
}

std::optional<Value> value_of(const JobSummary& job, std::string_view name) {
  if (auto p = job.params.find(std::string(name)); p != job.params.end())
    return Value{p->second, as_number(p->second)};
  if (auto [m, last] = metric_of_key(job, name); m != nullptr) {
    // A value that is not finite (no finite best, a diverged last) is absent.
    const double v = last ? m->last : m->best;
    if (!std::isfinite(v)) return std::nullopt;
    return Value{fmt::format("{}", v), v};
  }
  auto number = [](double v) { return Value{fmt::format("{}", v), v}; };
  if (name == "name") return Value{job.name, std::nullopt};
  if (name == "state") return Value{std::string(to_string(job.state)), std::nullopt};
  if (name == "gpu") {
    if (!job.gpus.empty()) return Value{job.gpus, as_number(job.gpus)};
    if (job.device) return number(*job.device);
    return std::nullopt;
  }
  if (name == "epochs") return number(static_cast<double>(job.epochs));
  if (name == "duration_s" && job.duration_ms) return number(*job.duration_ms / 1000.0);
  if (name == "samples_per_s" && job.throughput_per_s) return number(*job.throughput_per_s);
  return std::nullopt;
}

// Whether any job of the run has `name` (a parameter, a metric or a field).
bool known(const RunSummary& summary, std::string_view name) {
  if (std::find(kFields.begin(), kFields.end(), name) != kFields.end()) return true;
  return std::any_of(summary.jobs.begin(), summary.jobs.end(), [&](const JobSummary& j) {
    return j.params.count(std::string(name)) > 0 || metric_of_key(j, name).first != nullptr;
  });
}

std::string known_names(const RunSummary& summary) {
  std::set<std::string> params, metrics;
  for (const JobSummary& j : summary.jobs) {
    for (const auto& [k, v] : j.params) params.insert(k);
    for (const MetricSeries& m : j.metrics) metrics.insert(m.name);
  }
  auto list = [](const auto& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n);
    return out.empty() ? std::string("none") : out;
  };
  return fmt::format("grid parameters: {}; metrics: {}; fields: {}", list(params), list(metrics),
                     list(kFields));
}

bool passes(const JobSummary& job, const JobFilter& f) {
  std::optional<Value> v = value_of(job, f.name);
  if (!v) return false;
  using Op = JobFilter::Op;
  if (f.op == Op::kEq || f.op == Op::kNe) {
    const bool equal = v->number && f.number ? *v->number == *f.number : v->text == f.value;
    return (f.op == Op::kEq) == equal;
  }
  if (!v->number || !f.number) return false;
  const double a = *v->number, b = *f.number;
  switch (f.op) {
    case Op::kLt:
      return a < b;
    case Op::kLe:
      return a <= b;
    case Op::kGt:
      return a > b;
    case Op::kGe:
      return a >= b;
    default:
      return false;
  }
}

}  // namespace

Result<JobFilter> parse_job_filter(std::string_view text) {
  // The longest operator at the first place one occurs.
  static constexpr std::array<std::pair<std::string_view, JobFilter::Op>, 6> kOps = {{
      {"<=", JobFilter::Op::kLe},
      {">=", JobFilter::Op::kGe},
      {"!=", JobFilter::Op::kNe},
      {"=", JobFilter::Op::kEq},
      {"<", JobFilter::Op::kLt},
      {">", JobFilter::Op::kGt},
  }};
  const size_t at = text.find_first_of("<>=!");
  JobFilter f;
  f.text = std::string(text);
  if (at != std::string_view::npos) {
    for (const auto& [op, kind] : kOps) {
      if (text.substr(at, op.size()) == op) {
        f.name = std::string(trim_space(text.substr(0, at)));
        f.op = kind;
        f.value = std::string(trim_space(text.substr(at + op.size())));
        break;
      }
    }
  }
  if (f.name.empty() || f.value.empty()) {
    return Error(fmt::format(
        "--filter '{}': expected NAME OP VALUE, with OP one of = != < <= > >= (e.g. lr=0.1, "
        "loss<0.5, state=ok)",
        text));
  }
  f.number = as_number(f.value);
  const bool ordering = f.op != JobFilter::Op::kEq && f.op != JobFilter::Op::kNe;
  if (ordering && !f.number) {
    return Error(fmt::format(
        "--filter '{}': {} compares numbers, and '{}' is not one", text,
        text.substr(at, f.op == JobFilter::Op::kLe || f.op == JobFilter::Op::kGe ? 2 : 1),
        f.value));
  }
  return f;
}

std::string declared_objective(const RunSummary& summary) {
  std::string objective;
  bool reported = false;
  for (const JobSummary& j : summary.jobs) {
    if (j.objective.empty()) continue;
    if (!objective.empty() && j.objective != objective) return "";
    objective = j.objective;
    reported |= find_metric(j.metrics, objective) != nullptr;
  }
  return reported ? objective : "";
}

Status select_jobs(RunSummary& summary, const std::vector<JobFilter>& filters,
                   std::string_view sort_key) {
  for (const JobFilter& f : filters) {
    if (!known(summary, f.name)) {
      return Error(fmt::format("--filter '{}': no job of run #{} has '{}' ({})", f.text,
                               summary.run.id, f.name, known_names(summary)));
    }
  }
  std::erase_if(summary.jobs, [&](const JobSummary& job) {
    return !std::all_of(filters.begin(), filters.end(),
                        [&](const JobFilter& f) { return passes(job, f); });
  });
  if (sort_key.empty()) return OkStatus();
  const bool reversed = sort_key.front() == '-';
  const std::string key(reversed ? sort_key.substr(1) : sort_key);
  if (!known(summary, key)) {
    return Error(fmt::format("--sort {}: no job of run #{} has '{}' ({})", sort_key, summary.run.id,
                             key, known_names(summary)));
  }
  // A metric sorts best first (by its declared goal, else its name), and
  // jobs that failed or diverged after every other; everything else ascending.
  bool higher_first = false;
  bool is_metric = false;
  for (const JobSummary& j : summary.jobs) {
    if (const MetricSeries* m = metric_of_key(j, key).first) {
      higher_first = !m->lower_is_better;
      is_metric = true;
      break;
    }
  }
  if (reversed) higher_first = !higher_first;

  const bool numeric = std::all_of(summary.jobs.begin(), summary.jobs.end(), [&](const auto& j) {
    std::optional<Value> v = value_of(j, key);
    return !v || v->number;
  });
  std::stable_sort(summary.jobs.begin(), summary.jobs.end(),
                   [&](const JobSummary& a, const JobSummary& b) {
                     if (is_metric && failed_or_diverged(a) != failed_or_diverged(b))
                       return failed_or_diverged(b);
                     std::optional<Value> va = value_of(a, key), vb = value_of(b, key);
                     if (!va || !vb) return va.has_value() && !vb.has_value();  // absent last
                     if (numeric) {
                       return higher_first ? *va->number > *vb->number : *va->number < *vb->number;
                     }
                     return higher_first ? va->text > vb->text : va->text < vb->text;
                   });
  return OkStatus();
}

Status order_as_shown(RunSummary& summary, const std::vector<JobFilter>& filters,
                      std::string_view sort_key) {
  const std::string key = sort_key.empty() ? declared_objective(summary) : std::string(sort_key);
  return select_jobs(summary, filters, key);
}

}  // namespace colo
