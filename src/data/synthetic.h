// A synthetic image dataset in ImageFolder layout, for tests and benchmarks
// where no real dataset can be downloaded: real JPEG files of varied sizes
// and content (class-coloured shapes over gradients, with noise), so that
// reading and decoding cost about what they cost on photographs of that size.
// Deterministic for a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/result.h"
#include "data/jpeg_codec.h"

namespace colo {

struct SyntheticOptions {
  int64_t images = 1000;  // in all, spread evenly over the classes
  int size = 256;         // typical side in pixels; each side varies from 0.6x to 1.4x
  int classes = 10;
  int quality = 90;  // JPEG quality
  uint64_t seed = 1;
  int threads = 0;  // 0: every core
};

// The image of sample `index` (its class is index % classes).
RgbImage synthetic_image(const SyntheticOptions& options, int64_t index);

// Writes <out_dir>/class_NNN/img_NNNNNNN.jpg. out_dir must not exist or be
// empty. `progress(done, total)` is called from one thread now and then.
Status make_synthetic(const SyntheticOptions& options, const std::string& out_dir,
                      const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace colo
