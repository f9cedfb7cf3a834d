#include "bench/suite.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>

namespace colo {
namespace {

constexpr int kUniformDegrees[] = {1, 2, 3, 7};

// The collocating mechanisms, in the order cases of one degree run.
constexpr const char* kSharingMechanisms[] = {"naive", "mps", "mig"};

struct UniformGroup {
  std::string workload;  // "small"
  Workload job;
};

std::vector<UniformGroup> uniform_groups() {
  return {{"small", small_resnet26()},
          {"medium", medium_resnet50()},
          {"medium", medium_efficientnet()},
          {"large", large_resnet152()},
          {"large", large_cait()}};
}

// A mix: its name ("S+M+M") and its jobs.
struct Mix {
  std::string name;
  std::vector<Workload> jobs;
};

std::vector<Mix> paper_mixes() {
  const Workload s = small_resnet26();
  const Workload m = medium_resnet50();
  return {{"S+M+M", {s, m, m}}, {"S+S+M+M", {s, s, m, m}}, {"S+M+M+M", {s, m, m, m}}};
}

BenchCase make_case(std::string name, std::string workload, std::string models,
                    std::string mechanism, std::vector<Workload> jobs, bool serial = false) {
  BenchCase c;
  c.name = std::move(name);
  c.workload = std::move(workload);
  c.models = std::move(models);
  c.mechanism = std::move(mechanism);
  c.serial = serial;
  c.degree = static_cast<int>(jobs.size());
  c.jobs = std::move(jobs);
  return c;
}

// Repetition 1 of every case of the suite, names without the "/rN" suffix.
Result<std::vector<BenchCase>> suite_cases(const std::string& suite) {
  std::vector<BenchCase> cases;
  if (suite == "paper-uniform") {
    for (const UniformGroup& g : uniform_groups()) {
      const std::string prefix = g.workload + "/" + g.job.model;
      cases.push_back(
          make_case(prefix + "/exclusive/x1", g.workload, g.job.model, "exclusive", {g.job}));
      for (int degree : kUniformDegrees) {
        for (const char* mechanism : kSharingMechanisms) {
          cases.push_back(make_case(fmt::format("{}/{}/x{}", prefix, mechanism, degree), g.workload,
                                    g.job.model, mechanism,
                                    std::vector<Workload>(static_cast<size_t>(degree), g.job)));
        }
      }
    }
  } else if (suite == "paper-mixed") {
    for (const Mix& mix : paper_mixes()) {
      const int degree = static_cast<int>(mix.jobs.size());
      cases.push_back(make_case(fmt::format("mixed/{}/serial/x{}", mix.name, degree), "mixed",
                                mix.name, "exclusive", mix.jobs, /*serial=*/true));
      for (const char* mechanism : kSharingMechanisms) {
        cases.push_back(make_case(fmt::format("mixed/{}/{}/x{}", mix.name, mechanism, degree),
                                  "mixed", mix.name, mechanism, mix.jobs));
      }
    }
  } else if (suite == "paper-recsys") {
    const Workload dlrm = recsys_dlrm();
    const Workload resnet = large_resnet152();
    cases.push_back(make_case("recsys/dlrm/exclusive/x1", "recsys", "dlrm", "exclusive", {dlrm}));
    cases.push_back(
        make_case("recsys/resnet152/exclusive/x1", "recsys", "resnet152", "exclusive", {resnet}));
    for (const char* mechanism : kSharingMechanisms) {
      cases.push_back(make_case(fmt::format("recsys/dlrm+resnet152/{}/x2", mechanism), "recsys",
                                "dlrm+resnet152", mechanism, {dlrm, resnet}));
    }
  } else {
    std::string names;
    for (const SuiteInfo& s : bench_suites()) names += (names.empty() ? "" : ", ") + s.name;
    return Error(
        fmt::format("unknown suite '{}'; the suites are {} (`colo bench --list`)", suite, names));
  }
  return cases;
}

bool matches_any(const std::string& name, const std::vector<std::string>& globs) {
  return globs.empty() || std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
           return fnmatch(g.c_str(), name.c_str(), 0) == 0;
         });
}

}  // namespace

std::string Workload::label() const { return fmt::format("{}/{}/b{}", model, dataset, batch_size); }

Workload small_resnet26() { return {"resnet26", "cifar10", 128}; }
Workload medium_resnet50() { return {"resnet50", "imagenet64", 128}; }
Workload medium_efficientnet() { return {"efficientnetv2_s", "imagenet64", 32}; }
Workload large_resnet152() { return {"resnet152", "imagenet", 32}; }
Workload large_cait() { return {"cait_xxs24_224", "imagenet", 128}; }
Workload recsys_dlrm() { return {"dlrm", "criteo", 2048}; }

const std::vector<SuiteInfo>& bench_suites() {
  static const std::vector<SuiteInfo> kSuites = {
      {"paper-uniform",
       "small (resnet26), medium (resnet50, efficientnetv2_s), large (resnet152, cait_xxs24_224) "
       "at degree 1, 2, 3, 7 under naive, mps, mig, with an exclusive degree-1 baseline"},
      {"paper-mixed",
       "S+M+M, S+S+M+M, S+M+M+M (S resnet26, M resnet50) under serial, naive, mps, mig"},
      {"paper-recsys",
       "a DLRM-style recommender alone, resnet152 alone, and the two together under naive, mps, "
       "mig"},
  };
  return kSuites;
}

Result<std::vector<BenchCase>> expand_suite(const std::string& suite,
                                            const ExpandOptions& options) {
  if (options.repetitions < 1) {
    return Error(fmt::format("--repeat must be at least 1, got {}", options.repetitions));
  }
  Result<std::vector<BenchCase>> base = suite_cases(suite);
  if (!base.ok()) return base.error();
  std::vector<BenchCase> cases;
  for (int r = 1; r <= options.repetitions; ++r) {
    for (const BenchCase& b : *base) {
      BenchCase c = b;
      c.repetition = r;
      c.name = fmt::format("{}/r{}", b.name, r);
      if (!matches_any(c.name, options.case_globs) && !matches_any(b.name, options.case_globs))
        continue;
      if (c.mechanism == "mig" && !options.mig_reason.empty()) {
        c.status = "not_run";
        c.reason = options.mig_reason;
      } else if (c.mechanism == "mps" && !options.mps_reason.empty()) {
        c.status = "not_run";
        c.reason = options.mps_reason;
      }
      cases.push_back(std::move(c));
    }
  }
  if (cases.empty()) {
    std::string globs;
    for (const std::string& g : options.case_globs)
      globs += (globs.empty() ? "'" : ", '") + g + "'";
    return Error(
        fmt::format("no case of {} matches {}; `colo bench --suite {} --list` lists the case names",
                    suite, globs, suite));
  }
  return cases;
}

std::string mig_not_run_reason(const DeviceInfo& device) {
  if (!device.mig_enabled.has_value() && device.mig_profiles.empty()) return "this GPU has no MIG";
  if (!device.mig_enabled.value_or(false)) {
    return fmt::format("MIG mode is disabled on gpu{} (colo never changes it)", device.index);
  }
  return "";
}

std::vector<std::string> split_globs(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string piece = text.substr(start, comma - start);
    if (!piece.empty()) out.push_back(piece);
    start = comma + 1;
  }
  return out;
}

}  // namespace colo
