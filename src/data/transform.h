// The per-sample image transform of the shared loader, as torchvision's
// training pipeline does it: RandomResizedCrop(size, scale, ratio), a random
// horizontal flip, then ToTensor and Normalize(mean, std), written as float32
// CHW. Resampling is bilinear with antialiasing when shrinking (a triangle
// filter widened by the shrink factor, as PIL's BILINEAR resize).
//
// Without augmentation the output is the centered square of the image's
// shorter side, resized to size x size, never flipped: deterministic.
#pragma once

#include <array>
#include <cstdint>
#include <random>

#include "data/jpeg_codec.h"

namespace colo {

struct TransformOptions {
  int size = 224;           // output height and width
  bool augment = true;      // random-resized-crop + flip; false: center square, resized
  double scale_min = 0.08;  // crop area as a fraction of the image's area
  double scale_max = 1.0;
  double ratio_min = 3.0 / 4.0;  // crop width / height, sampled log-uniformly
  double ratio_max = 4.0 / 3.0;
  double flip_probability = 0.5;
  std::array<float, 3> mean = {0.485F, 0.456F, 0.406F};  // of pixel / 255, per channel
  std::array<float, 3> std = {0.229F, 0.224F, 0.225F};
};

// A crop of a width x height image, in its pixel coordinates.
struct CropBox {
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
  bool flip = false;
};

// The crop torchvision's RandomResizedCrop.get_params would pick (ten tries,
// then a center crop with the ratio clamped), and the flip; or the center
// square when options.augment is false.
CropBox plan_crop(int width, int height, const TransformOptions& options, std::mt19937_64& rng);

// Writes `box` of `image` resized to size x size, flipped if box.flip,
// normalized, as 3 planes of size*size floats into `out`. The box is in
// full-size coordinates; `image` may be the full image decoded smaller, by
// scale_x horizontally and scale_y vertically.
void crop_resize_normalize(const RgbImage& image, CropBox box, double scale_x, double scale_y,
                           const TransformOptions& options, float* out);

}  // namespace colo
