#include "mig/mig_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "common/units.h"

namespace colo {
namespace {

// One instance to place: an index into geometry.profiles.
struct Instance {
  size_t profile = 0;
  std::optional<uint64_t> needed_bytes;
};

// Splits at spaces, tabs and commas; drops empty words.
std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  for (char c : text) {
    if (c == ' ' || c == ',' || c == '\t' || c == '\n') {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

std::string starts_text(const std::vector<int>& starts) {
  std::string out;
  for (int s : starts) out += out.empty() ? std::to_string(s) : "," + std::to_string(s);
  return "{" + out + "}";
}

class Search {
 public:
  Search(const MigGeometry& geometry, std::vector<Instance> instances,
         const std::vector<MigPlacement>& occupied)
      : geometry_(geometry),
        instances_(std::move(instances)),
        used_(static_cast<size_t>(geometry.memory_slices), false),
        starts_(instances_.size(), -1) {
    for (const MigPlacement& o : occupied) {
      for (int s = std::max(0, o.start); s < o.start + o.size && s < geometry.memory_slices; ++s) {
        used_[static_cast<size_t>(s)] = true;
      }
    }
  }

  bool run() { return place(0); }
  int start_of(size_t i) const { return starts_[i]; }

 private:
  const MigProfileSpec& spec(size_t i) const { return geometry_.profiles[instances_[i].profile]; }

  bool fits(const MigProfileSpec& p, int start) const {
    if (start < 0 || start + p.memory_slices > geometry_.memory_slices) return false;
    for (int s = start; s < start + p.memory_slices; ++s) {
      if (used_[static_cast<size_t>(s)]) return false;
    }
    return true;
  }

  void mark(const MigProfileSpec& p, int start, bool value) {
    for (int s = start; s < start + p.memory_slices; ++s) used_[static_cast<size_t>(s)] = value;
  }

  int largest_free_block() const {
    int best = 0;
    int run = 0;
    for (bool u : used_) {
      run = u ? 0 : run + 1;
      best = std::max(best, run);
    }
    return best;
  }

  // Allowed starts still free for the instances after `next`.
  int options_left(size_t next) const {
    int total = 0;
    for (size_t i = next; i < instances_.size(); ++i) {
      const MigProfileSpec& p = spec(i);
      for (int s : p.starts) total += fits(p, s) ? 1 : 0;
    }
    return total;
  }

  bool place(size_t i) {
    if (i == instances_.size()) return true;
    const MigProfileSpec& p = spec(i);
    // Equal instances are interchangeable: place them at increasing starts.
    const int after =
        i > 0 && instances_[i - 1].profile == instances_[i].profile ? starts_[i - 1] : -1;
    struct Candidate {
      int start, block, options;
    };
    std::vector<Candidate> candidates;
    for (int s : p.starts) {
      if (s <= after || !fits(p, s)) continue;
      mark(p, s, true);
      candidates.push_back({s, largest_free_block(), options_left(i + 1)});
      mark(p, s, false);
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      if (a.block != b.block) return a.block > b.block;
      if (a.options != b.options) return a.options > b.options;
      return a.start < b.start;
    });
    for (const Candidate& c : candidates) {
      mark(p, c.start, true);
      starts_[i] = c.start;
      if (place(i + 1)) return true;
      mark(p, c.start, false);
      starts_[i] = -1;
    }
    return false;
  }

  const MigGeometry& geometry_;
  std::vector<Instance> instances_;
  std::vector<bool> used_;
  std::vector<int> starts_;
};

}  // namespace

Result<std::vector<MigRequest>> parse_mig_requests(const MigGeometry& geometry,
                                                   const std::vector<std::string>& words) {
  std::vector<MigRequest> requests;
  for (const std::string& argument : words) {
    for (const std::string& word : split_words(argument)) {
      const size_t colon = word.find(':');
      const std::string name = word.substr(0, colon);
      int count = 1;
      if (colon != std::string::npos) {
        const std::string text = word.substr(colon + 1);
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
        if (ec != std::errc() || end != text.data() + text.size() || text.empty() || count < 1) {
          return Error(fmt::format("'{}': the count after ':' must be a positive integer", word));
        }
      }
      const MigProfileSpec* p = geometry.find_profile(name);
      if (p == nullptr) {
        return Error(fmt::format("unknown MIG profile '{}' for {}; valid profiles: {}", name,
                                 geometry.model, geometry.profile_names()));
      }
      requests.push_back({p->name, count, std::nullopt});
    }
  }
  return requests;
}

Result<std::vector<uint64_t>> parse_memory_needs(std::string_view text) {
  std::vector<uint64_t> needs;
  for (const std::string& word : split_words(text)) {
    Result<uint64_t> bytes = parse_bytes(word);
    if (!bytes.ok()) return bytes.error().with_context(fmt::format("--memory '{}'", word));
    if (*bytes == 0) return Error(fmt::format("--memory '{}': a memory need must be > 0", word));
    needs.push_back(*bytes);
  }
  if (needs.empty()) return Error("--memory: give at least one size, e.g. 10GiB,20GiB");
  return needs;
}

Result<std::vector<MigRequest>> mig_requests_for_memory(const MigGeometry& geometry,
                                                        const std::vector<uint64_t>& needs) {
  std::vector<MigRequest> requests;
  for (uint64_t need : needs) {
    const MigProfileSpec* best = nullptr;
    const MigProfileSpec* largest = nullptr;
    for (const MigProfileSpec& p : geometry.profiles) {
      if (p.name.find('+') != std::string::npos) continue;
      if (largest == nullptr || p.memory_bytes > largest->memory_bytes) largest = &p;
      if (p.memory_bytes < need) continue;
      if (best == nullptr || p.memory_slices < best->memory_slices ||
          (p.memory_slices == best->memory_slices && p.compute_slices < best->compute_slices)) {
        best = &p;
      }
    }
    if (best == nullptr) {
      return Error(fmt::format("no MIG profile of {} holds {}; the largest, {}, has {}",
                               geometry.model, format_bytes(need),
                               largest != nullptr ? largest->name : "none",
                               format_bytes(largest != nullptr ? largest->memory_bytes : 0)));
    }
    requests.push_back({best->name, 1, need});
  }
  return requests;
}

std::string describe_requests(const std::vector<MigRequest>& requests) {
  std::vector<std::pair<std::string, int>> merged;
  for (const MigRequest& r : requests) {
    auto it = std::find_if(merged.begin(), merged.end(),
                           [&](const auto& m) { return m.first == r.profile; });
    if (it == merged.end()) {
      merged.emplace_back(r.profile, r.count);
    } else {
      it->second += r.count;
    }
  }
  std::string out;
  for (const auto& [name, count] : merged) {
    if (!out.empty()) out += " + ";
    out += count == 1 ? name : fmt::format("{} x {}", count, name);
  }
  return out;
}

Result<std::vector<MigPlacement>> plan_mig(const MigGeometry& geometry,
                                           const std::vector<MigRequest>& requests,
                                           const std::vector<MigPlacement>& occupied) {
  std::vector<Instance> instances;
  std::map<size_t, int> per_profile;  // profile index -> instances requested
  for (const MigRequest& r : requests) {
    const MigProfileSpec* p = geometry.find_profile(r.profile);
    if (p == nullptr) {
      return Error(fmt::format("unknown MIG profile '{}' for {}; valid profiles: {}", r.profile,
                               geometry.model, geometry.profile_names()));
    }
    if (r.count < 1) return Error(fmt::format("{}: count must be positive", r.profile));
    const auto index = static_cast<size_t>(p - geometry.profiles.data());
    for (int k = 0; k < r.count; ++k) instances.push_back({index, r.needed_bytes});
    per_profile[index] += r.count;
  }
  if (instances.empty()) return Error("nothing to plan: name at least one MIG profile");
  const std::string what = describe_requests(requests);
  // What the GPU already holds counts against its limits.
  std::string held;
  int compute = 0;
  int memory = 0;
  for (const MigPlacement& o : occupied) {
    held += fmt::format("{}{} at {}", held.empty() ? "" : ", ", o.profile, o.start);
    compute += o.compute_slices;
    memory += o.size;
    if (const MigProfileSpec* p = geometry.find_profile(o.profile)) {
      const auto index = static_cast<size_t>(p - geometry.profiles.data());
      if (per_profile.count(index)) per_profile[index] += 1;
    }
  }
  const std::string where = held.empty() ? "" : fmt::format(" (the GPU already holds {})", held);

  for (const auto& [index, count] : per_profile) {
    const MigProfileSpec& p = geometry.profiles[index];
    if (count > p.max_count) {
      return Error(fmt::format("{}: needs {} x {}; at most {} fit on one {}{}", what, count, p.name,
                               p.max_count, geometry.model, where));
    }
  }
  for (const Instance& in : instances) {
    compute += geometry.profiles[in.profile].compute_slices;
    memory += geometry.profiles[in.profile].memory_slices;
  }
  if (compute > geometry.compute_slices) {
    return Error(fmt::format("{}: needs {} compute slices; the GPU has {}{}", what, compute,
                             geometry.compute_slices, where));
  }
  if (memory > geometry.memory_slices) {
    return Error(fmt::format("{}: needs {} memory slices; the GPU has {}{}", what, memory,
                             geometry.memory_slices, where));
  }

  // Largest first: most memory slices, then most compute slices, then fewest
  // allowed starts (most constrained), then table order.
  std::stable_sort(instances.begin(), instances.end(), [&](const Instance& a, const Instance& b) {
    const MigProfileSpec& pa = geometry.profiles[a.profile];
    const MigProfileSpec& pb = geometry.profiles[b.profile];
    if (pa.memory_slices != pb.memory_slices) return pa.memory_slices > pb.memory_slices;
    if (pa.compute_slices != pb.compute_slices) return pa.compute_slices > pb.compute_slices;
    if (pa.starts.size() != pb.starts.size()) return pa.starts.size() < pb.starts.size();
    return a.profile < b.profile;
  });
  Search search(geometry, instances, occupied);
  if (!search.run()) {
    std::string rules;
    for (const auto& [index, count] : per_profile) {
      const MigProfileSpec& p = geometry.profiles[index];
      rules += fmt::format("{}{} starts {} size {}", rules.empty() ? "" : "; ", p.name,
                           starts_text(p.starts), p.memory_slices);
    }
    return Error(fmt::format(
        "{}: no non-overlapping starts: every allowed start was tried on the {} memory slices "
        "({}){}",
        what, geometry.memory_slices, rules, where));
  }
  std::vector<MigPlacement> placements;
  for (size_t i = 0; i < instances.size(); ++i) {
    const MigProfileSpec& p = geometry.profiles[instances[i].profile];
    placements.push_back({p.name, p.id, search.start_of(i), p.memory_slices, p.compute_slices,
                          p.memory_bytes, instances[i].needed_bytes});
  }
  std::stable_sort(placements.begin(), placements.end(),
                   [](const MigPlacement& a, const MigPlacement& b) { return a.start < b.start; });
  return placements;
}

}  // namespace colo
