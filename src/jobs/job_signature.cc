#include "jobs/job_signature.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace colo {
namespace {

// FNV-1a, 64 bits. Strings are fed with their length first so that
// ("ab", "c") and ("a", "bc") hash differently.
class Fnv1a64 {
 public:
  void add_bytes(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      hash_ ^= bytes[i];
      hash_ *= 1099511628211ULL;
    }
  }
  void add(std::string_view text) {
    uint64_t size = text.size();
    add_bytes(&size, sizeof size);
    add_bytes(text.data(), text.size());
  }
  std::string hex() const { return fmt::format("{:016x}", hash_); }

 private:
  uint64_t hash_ = 14695981039346656037ULL;
};

}  // namespace

std::string job_signature(const JobSpec& job) {
  Fnv1a64 hash;
  hash.add("argv");
  uint64_t argc = job.command.size();
  hash.add_bytes(&argc, sizeof argc);
  for (const std::string& arg : job.command) hash.add(arg);
  hash.add("cwd");
  hash.add(job.working_dir);
  hash.add("env");
  for (const auto& [key, value] : job.env) {  // std::map: sorted by key
    hash.add(key);
    hash.add(value);
  }
  // A gang's profile is per GPU of N: another job than the same command on
  // one GPU. One-GPU jobs keep the signatures they always had.
  if (job.gpus > 1) hash.add(fmt::format("gpus {}", job.gpus));
  return hash.hex();
}

std::vector<std::string> job_signatures(const std::vector<JobSpec>& jobs) {
  std::vector<std::string> out;
  out.reserve(jobs.size());
  for (const JobSpec& job : jobs) out.push_back(job_signature(job));
  return out;
}

std::string jobs_signature(std::vector<std::string> job_signatures) {
  std::sort(job_signatures.begin(), job_signatures.end());
  Fnv1a64 hash;
  for (const std::string& signature : job_signatures) hash.add(signature);
  return hash.hex();
}

}  // namespace colo
