#include "jobs/job_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <string_view>

namespace colo {
namespace {

// "--Batch_Size" -> "batchsize": flags compared without case, dashes or underscores.
std::string normalized(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '-' || c == '_' || c == '.') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Not "-m": `python -m module` names a module, not a model.
constexpr std::array kModelKeys = {"model",   "arch",     "modelname", "architecture",
                                   "network", "backbone", "modeltype"};
constexpr std::array kBatchKeys = {
    "batchsize", "bs", "b", "trainbatchsize", "perdevicetrainbatchsize", "microbatchsize"};
constexpr std::array kImageKeys = {"imagesize", "imgsize", "resolution",
                                   "inputsize", "imsize",  "cropsize"};
constexpr std::array kSeqKeys = {"seqlen",    "seqlength",      "maxseqlength",
                                 "maxseqlen", "blocksize",      "contextlength",
                                 "maxlength", "sequencelength", "ctxlen"};

template <size_t N>
bool one_of(const std::string& key, const std::array<const char*, N>& keys) {
  return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; });
}

std::optional<double> number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !(v > 0) || v > 1e9) return std::nullopt;
  return v;
}

std::string base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// Takes one key/value pair; true when it was a feature.
bool take(JobFeatures& f, const std::string& raw_key, std::string_view value) {
  const std::string key = normalized(raw_key);
  if (one_of(key, kModelKeys) && !value.empty() && f.model.empty()) {
    std::string model = base_name(value);  // "timm/resnet50" -> "resnet50"
    std::transform(model.begin(), model.end(), model.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    f.model = model;
    return true;
  }
  auto set = [&](std::optional<double>& field) {
    if (std::optional<double> v = number(value); v && !field) field = v;
    return true;
  };
  if (one_of(key, kBatchKeys)) return set(f.batch_size);
  if (one_of(key, kImageKeys)) return set(f.image_size);
  if (one_of(key, kSeqKeys)) return set(f.seq_len);
  return false;
}

}  // namespace

std::optional<double> JobFeatures::size() const {
  if (!batch_size && !image_size && !seq_len) return std::nullopt;
  return batch_size.value_or(1) * image_size.value_or(1) * image_size.value_or(1) *
         seq_len.value_or(1);
}

std::string JobFeatures::describe() const {
  std::string out = model;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (batch_size) add(fmt::format("batch {:g}", *batch_size));
  if (image_size) add(fmt::format("{:g} px", *image_size));
  if (seq_len) add(fmt::format("sequence {:g}", *seq_len));
  return out;
}

JobFeatures job_features(const std::vector<std::string>& command) {
  JobFeatures f;
  for (const std::string& arg : command) {
    if (arg.size() > 3 && arg.ends_with(".py")) {
      f.script = base_name(arg);
      break;
    }
  }
  if (f.script.empty() && !command.empty()) f.script = base_name(command.front());
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    const size_t eq = arg.find('=');
    if (arg.starts_with("-")) {
      const std::string key = arg.substr(0, eq).substr(arg.starts_with("--") ? 2 : 1);
      if (eq != std::string::npos) {
        take(f, key, std::string_view(arg).substr(eq + 1));
      } else if (i + 1 < command.size() && !command[i + 1].starts_with("--") &&
                 take(f, key, command[i + 1])) {
        ++i;
      }
    } else if (eq != std::string::npos && eq > 0) {  // Hydra: model=resnet50, data.batch_size=64
      std::string key = arg.substr(0, eq);
      if (size_t dot = key.rfind('.'); dot != std::string::npos) key = key.substr(dot + 1);
      take(f, key, std::string_view(arg).substr(eq + 1));
    }
  }
  return f;
}

}  // namespace colo
