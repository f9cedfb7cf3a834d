#include "data/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "common/paths.h"

namespace colo {
namespace fs = std::filesystem;

RgbImage synthetic_image(const SyntheticOptions& options, int64_t index) {
  std::mt19937_64 rng(options.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(index));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int cls = static_cast<int>(index % options.classes);
  RgbImage img;
  img.width = std::max(8, static_cast<int>(options.size * (0.6 + 0.8 * unit(rng))));
  img.height = std::max(8, static_cast<int>(options.size * (0.6 + 0.8 * unit(rng))));
  img.pixels.resize(static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 3);
  // A class hue, and a background gradient between two colours near it.
  const double hue = 2.0 * M_PI * cls / options.classes;
  auto colour = [&](double shift, double light) {
    std::array<double, 3> c{};
    for (int k = 0; k < 3; ++k)
      c[static_cast<size_t>(k)] = 255.0 * light * (0.5 + 0.5 * std::cos(hue + shift + 2.0944 * k));
    return c;
  };
  const auto from = colour(unit(rng) - 0.5, 0.4 + 0.5 * unit(rng));
  const auto to = colour(unit(rng) - 0.5, 0.4 + 0.5 * unit(rng));
  const double angle = 2 * M_PI * unit(rng);
  const double gx = std::cos(angle) / img.width;
  const double gy = std::sin(angle) / img.height;
  const int noise_amplitude = 24 + static_cast<int>(40 * unit(rng));
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      double t =
          std::clamp(0.5 + (x - img.width / 2.0) * gx + (y - img.height / 2.0) * gy, 0.0, 1.0);
      uint8_t* p = &img.pixels[(static_cast<size_t>(y) * static_cast<size_t>(img.width) +
                                static_cast<size_t>(x)) *
                               3];
      for (size_t k = 0; k < 3; ++k) p[k] = static_cast<uint8_t>(from[k] + (to[k] - from[k]) * t);
    }
  }
  // Shapes: ellipses and rectangles in colours around the class hue.
  const int shapes = 3 + static_cast<int>(unit(rng) * 8);
  for (int s = 0; s < shapes; ++s) {
    const auto c = colour(1.5 * (unit(rng) - 0.5), 0.3 + 0.7 * unit(rng));
    const double cx = unit(rng) * img.width;
    const double cy = unit(rng) * img.height;
    const double rx = (0.05 + 0.3 * unit(rng)) * img.width;
    const double ry = (0.05 + 0.3 * unit(rng)) * img.height;
    const bool ellipse = unit(rng) < 0.5;
    const int x0 = std::max(0, static_cast<int>(cx - rx));
    const int x1 = std::min(img.width - 1, static_cast<int>(cx + rx));
    const int y0 = std::max(0, static_cast<int>(cy - ry));
    const int y1 = std::min(img.height - 1, static_cast<int>(cy + ry));
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) {
        if (ellipse) {
          const double dx = (x - cx) / rx;
          const double dy = (y - cy) / ry;
          if (dx * dx + dy * dy > 1.0) continue;
        }
        uint8_t* p = &img.pixels[(static_cast<size_t>(y) * static_cast<size_t>(img.width) +
                                  static_cast<size_t>(x)) *
                                 3];
        for (size_t k = 0; k < 3; ++k) p[k] = static_cast<uint8_t>(c[k]);
      }
    }
  }
  // Sensor-like noise (triangular, from a xorshift generator: cheap): JPEG's
  // entropy coding then costs about what photographs cost.
  uint64_t state = rng() | 1;
  for (uint8_t& v : img.pixels) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const int a = static_cast<int>(state & 0xff);
    const int b = static_cast<int>((state >> 8) & 0xff);
    const int n = (a + b - 255) * noise_amplitude / 255;
    v = static_cast<uint8_t>(std::clamp(v + n, 0, 255));
  }
  return img;
}

Status make_synthetic(const SyntheticOptions& options, const std::string& out_dir,
                      const std::function<void(int64_t, int64_t)>& progress) {
  if (options.images < 1 || options.classes < 1 || options.size < 8 || options.quality < 1 ||
      options.quality > 100) {
    return Error(
        "make-synthetic: --images and --classes must be at least 1, --size at least 8, "
        "--quality 1..100");
  }
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !fs::is_empty(out_dir, ec))
    return Error(fmt::format("{} exists and is not empty; choose a new directory", out_dir));
  for (int c = 0; c < options.classes; ++c) {
    if (Status s = make_dirs(fmt::format("{}/class_{:03}", out_dir, c)); !s.ok()) return s;
  }
  const int threads = options.threads > 0
                          ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex error_mutex;
  std::optional<Error> first_error;
  auto work = [&] {
    while (true) {
      {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error) return;
      }
      const int64_t i = next.fetch_add(1);
      if (i >= options.images) return;
      Result<std::vector<uint8_t>> jpeg = encode_jpeg(synthetic_image(options, i), options.quality);
      std::string path =
          fmt::format("{}/class_{:03}/img_{:07}.jpg", out_dir, i % options.classes, i);
      std::ofstream out(path, std::ios::binary);
      if (jpeg.ok())
        out.write(reinterpret_cast<const char*>(jpeg->data()),
                  static_cast<std::streamsize>(jpeg->size()));
      if (!jpeg.ok() || !out) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error)
          first_error = jpeg.ok() ? Error(fmt::format("cannot write {}", path)) : jpeg.error();
        return;
      }
      done.fetch_add(1);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  if (progress) {
    while (done.load() < options.images) {
      {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error) break;
      }
      progress(done.load(), options.images);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  for (std::thread& t : pool) t.join();
  if (first_error) return *first_error;
  if (progress) progress(done.load(), options.images);
  return OkStatus();
}

}  // namespace colo
