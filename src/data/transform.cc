#include "data/transform.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace colo {
namespace {

// Source taps and weights of each output sample along one axis.
struct Taps {
  std::vector<int> first;      // first source index per output sample
  std::vector<int> count;      // taps per output sample
  std::vector<float> weights;  // count[o] weights per output sample, at o * max_taps
  int max_taps = 0;
};

Taps make_taps(double start, double length, int source_size, int out_size) {
  Taps t;
  const double step = length / out_size;
  const double support = std::max(step, 1.0);  // triangle radius in source pixels
  t.max_taps = static_cast<int>(std::ceil(support)) * 2 + 2;
  t.first.resize(static_cast<size_t>(out_size));
  t.count.resize(static_cast<size_t>(out_size));
  t.weights.assign(static_cast<size_t>(out_size) * static_cast<size_t>(t.max_taps), 0.0F);
  for (int o = 0; o < out_size; ++o) {
    const double center = start + (o + 0.5) * step;
    int lo = static_cast<int>(std::floor(center - support));
    int hi = static_cast<int>(std::ceil(center + support));
    lo = std::max(lo, 0);
    hi = std::min(hi, source_size - 1);
    if (hi < lo) lo = hi = std::clamp(static_cast<int>(center), 0, source_size - 1);
    double total = 0;
    int n = 0;
    float* w = &t.weights[static_cast<size_t>(o) * static_cast<size_t>(t.max_taps)];
    for (int i = lo; i <= hi && n < t.max_taps; ++i, ++n) {
      double d = std::abs((i + 0.5 - center) / support);
      double weight = std::max(0.0, 1.0 - d);
      w[n] = static_cast<float>(weight);
      total += weight;
    }
    if (total <= 0) {  // the box is narrower than a pixel: nearest
      n = 1;
      lo = std::clamp(static_cast<int>(center), 0, source_size - 1);
      w[0] = 1.0F;
      total = 1.0;
    }
    for (int k = 0; k < n; ++k) w[k] = static_cast<float>(w[k] / total);
    t.first[static_cast<size_t>(o)] = lo;
    t.count[static_cast<size_t>(o)] = n;
  }
  return t;
}

}  // namespace

CropBox plan_crop(int width, int height, const TransformOptions& options, std::mt19937_64& rng) {
  CropBox box;
  const double w_full = width;
  const double h_full = height;
  if (!options.augment) {
    const double side = std::min(w_full, h_full);
    box.x = (w_full - side) / 2;
    box.y = (h_full - side) / 2;
    box.width = box.height = side;
    return box;
  }
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double area = w_full * h_full;
  const double log_lo = std::log(options.ratio_min);
  const double log_hi = std::log(options.ratio_max);
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target =
        area * (options.scale_min + (options.scale_max - options.scale_min) * unit(rng));
    const double ratio = std::exp(log_lo + (log_hi - log_lo) * unit(rng));
    const double w = std::round(std::sqrt(target * ratio));
    const double h = std::round(std::sqrt(target / ratio));
    if (w > 0 && h > 0 && w <= w_full && h <= h_full) {
      box.x = std::floor(unit(rng) * (w_full - w + 1));
      box.y = std::floor(unit(rng) * (h_full - h + 1));
      box.width = w;
      box.height = h;
      found = true;
    }
  }
  if (!found) {
    const double in_ratio = w_full / h_full;
    double w = w_full;
    double h = h_full;
    if (in_ratio < options.ratio_min) {
      h = std::round(w / options.ratio_min);
    } else if (in_ratio > options.ratio_max) {
      w = std::round(h * options.ratio_max);
    }
    box.x = (w_full - w) / 2;
    box.y = (h_full - h) / 2;
    box.width = w;
    box.height = h;
  }
  box.flip = unit(rng) < options.flip_probability;
  return box;
}

void crop_resize_normalize(const RgbImage& image, CropBox box, double scale_x, double scale_y,
                           const TransformOptions& options, float* out) {
  const int size = options.size;
  const Taps xs = make_taps(box.x * scale_x, box.width * scale_x, image.width, size);
  const Taps ys = make_taps(box.y * scale_y, box.height * scale_y, image.height, size);
  const int row_lo = ys.first.front();
  const int row_hi = ys.first.back() + ys.count.back() - 1;
  const int rows = row_hi - row_lo + 1;
  // Horizontal pass over the rows the vertical pass reads: rows x size x 3.
  std::vector<float> horizontal(static_cast<size_t>(rows) * static_cast<size_t>(size) * 3);
  for (int r = 0; r < rows; ++r) {
    const uint8_t* src =
        &image.pixels[static_cast<size_t>(row_lo + r) * static_cast<size_t>(image.width) * 3];
    float* dst = &horizontal[static_cast<size_t>(r) * static_cast<size_t>(size) * 3];
    for (int o = 0; o < size; ++o) {
      const float* w = &xs.weights[static_cast<size_t>(o) * static_cast<size_t>(xs.max_taps)];
      const uint8_t* p = src + static_cast<size_t>(xs.first[static_cast<size_t>(o)]) * 3;
      float a = 0;
      float b = 0;
      float c = 0;
      for (int k = 0; k < xs.count[static_cast<size_t>(o)]; ++k, p += 3) {
        a += w[k] * p[0];
        b += w[k] * p[1];
        c += w[k] * p[2];
      }
      float* out_pixel = dst + static_cast<ptrdiff_t>(o) * 3;
      out_pixel[0] = a;
      out_pixel[1] = b;
      out_pixel[2] = c;
    }
  }
  // Vertical pass, flip and normalization into CHW planes.
  std::array<float, 3> mul{};
  std::array<float, 3> add{};
  for (int ch = 0; ch < 3; ++ch) {
    mul[static_cast<size_t>(ch)] = 1.0F / (255.0F * options.std[static_cast<size_t>(ch)]);
    add[static_cast<size_t>(ch)] =
        -options.mean[static_cast<size_t>(ch)] / options.std[static_cast<size_t>(ch)];
  }
  const size_t plane = static_cast<size_t>(size) * static_cast<size_t>(size);
  for (int oy = 0; oy < size; ++oy) {
    const float* w = &ys.weights[static_cast<size_t>(oy) * static_cast<size_t>(ys.max_taps)];
    const int first = ys.first[static_cast<size_t>(oy)] - row_lo;
    const int count = ys.count[static_cast<size_t>(oy)];
    for (int ox = 0; ox < size; ++ox) {
      float a = 0;
      float b = 0;
      float c = 0;
      for (int k = 0; k < count; ++k) {
        const float* h = &horizontal[(static_cast<size_t>(first + k) * static_cast<size_t>(size) +
                                      static_cast<size_t>(ox)) *
                                     3];
        a += w[k] * h[0];
        b += w[k] * h[1];
        c += w[k] * h[2];
      }
      const int x = box.flip ? size - 1 - ox : ox;
      const size_t at =
          static_cast<size_t>(oy) * static_cast<size_t>(size) + static_cast<size_t>(x);
      out[at] = a * mul[0] + add[0];
      out[plane + at] = b * mul[1] + add[1];
      out[2 * plane + at] = c * mul[2] + add[2];
    }
  }
}

}  // namespace colo
