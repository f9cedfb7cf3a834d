#include "mig/mig_profiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "common/units.h"

namespace colo {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string strip_mig_prefix(std::string_view name) {
  std::string out = lower(name);
  if (out.rfind("mig ", 0) == 0) out.erase(0, 4);
  return out;
}

// Allowed starts by placement class, from the NVIDIA MIG user guide (A100 and
// H100 "supported profiles" figures and `nvidia-smi mig -lgipp`): memory slice
// 7 can only be reached by a profile two or more slices wide, so the 1-slice
// profiles start at 0..6; 2-slice 1g profiles at 0,2,4,6; 2g at 0,2,4; 3g at
// 0,4; 4g at 0 only; 7g at 0.
const std::vector<int> kStarts1 = {0, 1, 2, 3, 4, 5, 6};
const std::vector<int> kStarts1gDouble = {0, 2, 4, 6};
const std::vector<int> kStarts2g = {0, 2, 4};
const std::vector<int> kStarts3g = {0, 4};
const std::vector<int> kStartsZero = {0};

struct Row {
  int id;
  const char* suffix_name;
  int compute;
  int memory;
  uint64_t memory_mib;
  int sms;
  const std::vector<int>* starts;
  int max_count;
};

MigGeometry make(std::string model, std::string source, const std::vector<Row>& rows) {
  MigGeometry g;
  g.model = std::move(model);
  g.source = std::move(source);
  for (const Row& r : rows) {
    g.profiles.push_back({r.id, r.suffix_name, r.compute, r.memory, r.memory_mib * kMiB, r.sms,
                          *r.starts, r.max_count});
  }
  return g;
}

// Memory sizes: the "Memory GiB" column of `nvidia-smi mig -lgip`. H200: read
// off the machine (docs/results/2026-11-22-h200-gpu-check/lgip.txt). A100 and
// H100: published listings of that command, not checked on a machine here;
// the live geometry replaces them with NVML's numbers.
std::vector<MigGeometry> make_builtins() {
  const std::string guide = "built-in table (NVIDIA MIG user guide)";
  std::vector<MigGeometry> all;
  all.push_back(make("A100-40GB", guide,
                     {{19, "1g.5gb", 1, 1, 4864, 14, &kStarts1, 7},
                      {20, "1g.5gb+me", 1, 1, 4864, 14, &kStarts1, 1},
                      {15, "1g.10gb", 1, 2, 9856, 14, &kStarts1gDouble, 4},
                      {14, "2g.10gb", 2, 2, 9856, 28, &kStarts2g, 3},
                      {9, "3g.20gb", 3, 4, 20096, 42, &kStarts3g, 2},
                      {5, "4g.20gb", 4, 4, 20096, 56, &kStartsZero, 1},
                      {0, "7g.40gb", 7, 8, 40448, 98, &kStartsZero, 1}}));
  all.push_back(make("A100-80GB", guide,
                     {{19, "1g.10gb", 1, 1, 9728, 14, &kStarts1, 7},
                      {20, "1g.10gb+me", 1, 1, 9728, 14, &kStarts1, 1},
                      {15, "1g.20gb", 1, 2, 19968, 14, &kStarts1gDouble, 4},
                      {14, "2g.20gb", 2, 2, 19968, 28, &kStarts2g, 3},
                      {9, "3g.40gb", 3, 4, 40192, 42, &kStarts3g, 2},
                      {5, "4g.40gb", 4, 4, 40192, 56, &kStartsZero, 1},
                      {0, "7g.80gb", 7, 8, 81152, 98, &kStartsZero, 1}}));
  all.push_back(make("H100-80GB", guide,
                     {{19, "1g.10gb", 1, 1, 9984, 16, &kStarts1, 7},
                      {20, "1g.10gb+me", 1, 1, 9984, 16, &kStarts1, 1},
                      {15, "1g.20gb", 1, 2, 20096, 26, &kStarts1gDouble, 4},
                      {14, "2g.20gb", 2, 2, 20096, 32, &kStarts2g, 3},
                      {9, "3g.40gb", 3, 4, 40448, 60, &kStarts3g, 2},
                      {5, "4g.40gb", 4, 4, 40448, 64, &kStartsZero, 1},
                      {0, "7g.80gb", 7, 8, 81152, 132, &kStartsZero, 1}}));
  all.push_back(make("H200-141GB", guide,
                     {{19, "1g.18gb", 1, 1, 16384, 16, &kStarts1, 7},
                      {20, "1g.18gb+me", 1, 1, 16384, 16, &kStarts1, 1},
                      {15, "1g.35gb", 1, 2, 33280, 26, &kStarts1gDouble, 4},
                      {14, "2g.35gb", 2, 2, 33280, 32, &kStarts2g, 3},
                      {9, "3g.71gb", 3, 4, 71424, 60, &kStarts3g, 2},
                      {5, "4g.71gb", 4, 4, 71424, 64, &kStartsZero, 1},
                      {0, "7g.141gb", 7, 8, 143360, 132, &kStartsZero, 1}}));
  return all;
}

// Lower-case words of a name split at spaces, '-' and '_'.
std::vector<std::string> words_of(std::string_view name) {
  std::vector<std::string> words;
  std::string current;
  for (char c : name) {
    if (c == ' ' || c == '-' || c == '_') {
      if (!current.empty()) words.push_back(std::move(current));
      current.clear();
    } else {
      current += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  if (!current.empty()) words.push_back(std::move(current));
  return words;
}

// "40" from a word "40gb"; nullopt for other words.
std::optional<std::string> gigabytes_word(const std::string& word) {
  if (word.size() < 3 || word.substr(word.size() - 2) != "gb") return std::nullopt;
  std::string digits = word.substr(0, word.size() - 2);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c) != 0; })) {
    return std::nullopt;
  }
  return digits;
}

// The built-in model a device or model name means, or nullopt.
std::optional<std::string> model_for(std::string_view name, uint64_t memory_total_bytes) {
  std::optional<std::string> family;
  std::optional<std::string> gb;
  for (const std::string& word : words_of(name)) {
    for (const char* f : {"a100", "h100", "h200"}) {
      if (word.rfind(f, 0) == 0) family = f;
    }
    if (auto g = gigabytes_word(word)) gb = g;
  }
  if (!family) return std::nullopt;
  if (*family == "h200")
    return (!gb || *gb == "141") ? std::optional<std::string>("H200-141GB") : std::nullopt;
  if (*family == "h100")
    return (!gb || *gb == "80") ? std::optional<std::string>("H100-80GB") : std::nullopt;
  if (!gb && memory_total_bytes > 0) {
    gb = memory_total_bytes > uint64_t{60} * 1024 * kMiB ? "80" : "40";
  }
  if (gb && *gb == "40") return "A100-40GB";
  if (gb && *gb == "80") return "A100-80GB";
  return std::nullopt;
}

std::string known_models() {
  std::string out;
  for (const MigGeometry& g : builtin_mig_geometries()) {
    out += out.empty() ? g.model : ", " + g.model;
  }
  return out;
}

}  // namespace

const MigProfileSpec* MigGeometry::find_profile(std::string_view name) const {
  const std::string wanted = strip_mig_prefix(name);
  for (const MigProfileSpec& p : profiles) {
    if (strip_mig_prefix(p.name) == wanted) return &p;
  }
  return nullptr;
}

std::string MigGeometry::profile_names() const {
  std::string out;
  for (const MigProfileSpec& p : profiles) out += out.empty() ? p.name : ", " + p.name;
  return out;
}

bool compute_instance_fits(int slices, int gpu_instance_slices) {
  if (slices < 1 || slices > gpu_instance_slices) return false;
  switch (slices) {
    case 1:
    case 2:
      return true;
    case 3:
      return gpu_instance_slices == 3 || gpu_instance_slices == 7;
    case 4:
      return gpu_instance_slices == 4 || gpu_instance_slices == 7;
    case 7:
      return gpu_instance_slices == 7;
    default:
      return false;
  }
}

const std::vector<MigGeometry>& builtin_mig_geometries() {
  static const std::vector<MigGeometry> kBuiltins = make_builtins();
  return kBuiltins;
}

Result<MigGeometry> builtin_mig_geometry(std::string_view name, uint64_t memory_total_bytes) {
  if (std::optional<std::string> model = model_for(name, memory_total_bytes)) {
    for (const MigGeometry& g : builtin_mig_geometries()) {
      if (g.model == *model) return g;
    }
  }
  return Error(
      fmt::format("no built-in MIG table for GPU '{}'; known models: {}", name, known_models()));
}

Result<MigGeometry> live_mig_geometry(GpuBackend& backend, const DeviceInfo& device) {
  const std::string where = fmt::format("GPU {} ({})", device.index, device.name);
  if (device.mig_profiles.empty()) {
    return Error(fmt::format(
        "{} lists no MIG profiles: it does not support MIG or the driver is too old; plan "
        "offline with --gpu-model MODEL",
        where));
  }
  Result<MigGeometry> builtin = builtin_mig_geometry(device.name, device.memory_total_bytes);
  MigGeometry g;
  g.model = device.name;
  std::optional<std::string> refusal;  // the first placement query NVML refused
  std::vector<std::string> left_out;
  for (const MigProfile& p : device.mig_profiles) {
    MigProfileSpec spec{p.id,       p.name, p.slice_count,  0, p.memory_bytes,
                        p.sm_count, {},     p.max_instances};
    Result<std::vector<MigPlacementOption>> options = backend.mig_placements(device.index, p.id);
    if (options.ok() && !options->empty()) {
      spec.memory_slices = options->front().size;
      for (const MigPlacementOption& o : *options) {
        if (o.size != spec.memory_slices) {
          return Error(fmt::format("{}: NVML gave MIG profile {} placements of different sizes",
                                   where, p.name));
        }
        spec.starts.push_back(o.start);
      }
      std::sort(spec.starts.begin(), spec.starts.end());
    } else {
      if (!refusal) {
        refusal = options.ok() ? fmt::format("no placements for profile {}", p.name)
                               : options.error().message();
      }
      const MigProfileSpec* known = builtin.ok() ? builtin->find_profile(p.name) : nullptr;
      if (known == nullptr) {
        left_out.push_back(fmt::format("{} (id {})", p.name, p.id));
        continue;
      }
      spec.memory_slices = known->memory_slices;
      spec.starts = known->starts;
    }
    g.profiles.push_back(std::move(spec));
  }
  if (g.profiles.empty()) {
    return Error(
        fmt::format("{}: no MIG placements: {}; {}", where, refusal.value_or("unknown"),
                    builtin.ok() ? "no built-in profile matches" : builtin.error().message()));
  }
  g.compute_slices = 0;
  g.memory_slices = 0;
  for (const MigProfileSpec& p : g.profiles) {
    g.compute_slices = std::max(g.compute_slices, p.compute_slices);
    for (int start : p.starts) g.memory_slices = std::max(g.memory_slices, start + p.memory_slices);
  }
  g.source = fmt::format("live {}: profiles from {}", where, backend.name());
  if (refusal) {
    g.source += fmt::format(
        "; placements from the built-in {} table because the placement query failed ({}){}",
        builtin.ok() ? builtin->model : "?", *refusal,
        device.mig_enabled == std::optional<bool>(false) ? "; MIG mode is disabled" : "");
  } else {
    g.source += fmt::format("; placements from {}", backend.name());
  }
  if (!left_out.empty()) {
    std::string names;
    for (const std::string& n : left_out) names += names.empty() ? n : ", " + n;
    g.source += fmt::format("; left out (no known placements): {}", names);
  }
  return g;
}

}  // namespace colo
