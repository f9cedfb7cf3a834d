// JobFeatures: what a job's command says about its size, read the way a
// person would read it: the model's name, the batch size, the image size and
// the sequence length, and the script. The auto policy's priors
// (sched/prior.h) compare jobs it has never measured with those it has by
// these features. Pure; recognises the spellings of common training scripts
// (argparse flags with '-' or '_', "--flag value" and "--flag=value",
// Hydra-style "key=value") and leaves unknown what it does not recognise.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace colo {

struct JobFeatures {
  std::string script;                // the first *.py argument's file name, else the program's
  std::string model;                 // --model, --arch, --model-name, model=...; lower case
  std::optional<double> batch_size;  // --batch-size, --bs, -b, batch_size=...
  std::optional<double> image_size;  // --image-size, --img-size, --resolution, --input-size
  std::optional<double> seq_len;     // --seq-len, --max-seq-length, --block-size, --context-length

  // The work one step holds in memory, relative: batch x pixels x sequence
  // length, each factor 1 when unknown; nullopt when none is known.
  std::optional<double> size() const;
  // "resnet50, batch 128, 64 px" (what is known); "" when nothing is.
  std::string describe() const;
  bool operator==(const JobFeatures&) const = default;
};

JobFeatures job_features(const std::vector<std::string>& command);

}  // namespace colo
