#include "data/transform.h"

#include <gtest/gtest.h>

#include <cmath>

#include "data/jpeg_codec.h"
#include "data/synthetic.h"

namespace colo {
namespace {

RgbImage filled(int w, int h, std::function<std::array<uint8_t, 3>(int, int)> colour) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(static_cast<size_t>(w * h * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      auto c = colour(x, y);
      for (int k = 0; k < 3; ++k)
        img.pixels[static_cast<size_t>((y * w + x) * 3 + k)] = c[static_cast<size_t>(k)];
    }
  return img;
}

TransformOptions plain(int size) {
  TransformOptions o;
  o.size = size;
  o.augment = false;
  o.mean = {0, 0, 0};
  o.std = {1, 1, 1};
  return o;
}

TEST(TransformTest, WithoutAugmentationTheCropIsTheCenteredSquare) {
  std::mt19937_64 rng(1);
  CropBox box = plan_crop(300, 200, plain(10), rng);
  EXPECT_DOUBLE_EQ(box.x, 50);
  EXPECT_DOUBLE_EQ(box.y, 0);
  EXPECT_DOUBLE_EQ(box.width, 200);
  EXPECT_DOUBLE_EQ(box.height, 200);
  EXPECT_FALSE(box.flip);
}

TEST(TransformTest, RandomResizedCropsStayInsideWithinScaleAndRatio) {
  TransformOptions o;
  std::mt19937_64 rng(5);
  int flips = 0;
  const int draws = 2000;
  for (int i = 0; i < draws; ++i) {
    CropBox b = plan_crop(640, 480, o, rng);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_LE(b.x + b.width, 640);
    ASSERT_LE(b.y + b.height, 480);
    const double area = b.width * b.height / (640.0 * 480.0);
    ASSERT_GE(area, 0.079);
    ASSERT_LE(area, 1.0);
    const double ratio = b.width / b.height;
    ASSERT_GE(ratio, 0.74);
    ASSERT_LE(ratio, 1.34);
    flips += b.flip;
  }
  EXPECT_NEAR(static_cast<double>(flips) / draws, 0.5, 0.05);
}

TEST(TransformTest, NormalizesEachChannel) {
  TransformOptions o = plain(8);
  o.mean = {0.5F, 0.25F, 0.0F};
  o.std = {0.5F, 0.25F, 2.0F};
  RgbImage img = filled(20, 20, [](int, int) { return std::array<uint8_t, 3>{255, 0, 51}; });
  std::vector<float> out(3 * 64);
  crop_resize_normalize(img, {0, 0, 20, 20, false}, 1, 1, o, out.data());
  for (int i = 0; i < 64; ++i) {
    EXPECT_NEAR(out[static_cast<size_t>(i)], (1.0 - 0.5) / 0.5, 1e-5);
    EXPECT_NEAR(out[static_cast<size_t>(64 + i)], (0.0 - 0.25) / 0.25, 1e-5);
    EXPECT_NEAR(out[static_cast<size_t>(128 + i)], (0.2 - 0.0) / 2.0, 1e-5);
  }
}

TEST(TransformTest, SameSizeIsIdentityAndFlipMirrors) {
  RgbImage img = filled(4, 4, [](int x, int y) {
    return std::array<uint8_t, 3>{static_cast<uint8_t>(x * 10 + y), 0, 0};
  });
  TransformOptions o = plain(4);
  std::vector<float> out(48);
  crop_resize_normalize(img, {0, 0, 4, 4, false}, 1, 1, o, out.data());
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x)
      EXPECT_NEAR(out[static_cast<size_t>(y * 4 + x)] * 255, x * 10 + y, 1e-3);
  crop_resize_normalize(img, {0, 0, 4, 4, true}, 1, 1, o, out.data());
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x)
      EXPECT_NEAR(out[static_cast<size_t>(y * 4 + x)] * 255, (3 - x) * 10 + y, 1e-3);
}

TEST(TransformTest, ShrinkingAntialiases) {
  // A one-pixel checkerboard shrunk 8x is mid-grey everywhere, not stripes.
  RgbImage img = filled(64, 64, [](int x, int y) {
    uint8_t v = (x + y) % 2 ? 255 : 0;
    return std::array<uint8_t, 3>{v, v, v};
  });
  std::vector<float> out(3 * 64);
  crop_resize_normalize(img, {0, 0, 64, 64, false}, 1, 1, plain(8), out.data());
  for (float v : out) EXPECT_NEAR(v * 255, 127.5, 8);
}

TEST(TransformTest, ACropOfAScaledDecodeMatchesTheFullDecode) {
  SyntheticOptions s;
  s.size = 400;
  RgbImage original = synthetic_image(s, 3);
  Result<std::vector<uint8_t>> jpeg = encode_jpeg(original, 95);
  ASSERT_TRUE(jpeg.ok());
  JpegDecoder decoder;
  RgbImage full;
  RgbImage half;
  ASSERT_TRUE(decoder.decode(*jpeg, 1, 1 << 20, full).ok());  // too tall for any scale: full size
  EXPECT_EQ(full.width, original.width);
  const int w = original.width;
  const int h = original.height;
  ASSERT_TRUE(decoder.decode(*jpeg, (w + 1) / 2, (h + 1) / 2, half).ok());
  EXPECT_EQ(half.width, (w + 1) / 2);
  EXPECT_EQ(half.height, (h + 1) / 2);
  TransformOptions o = plain(32);
  CropBox box{10, 20, 200, 150, false};
  std::vector<float> a(3 * 32 * 32);
  std::vector<float> b(3 * 32 * 32);
  crop_resize_normalize(full, box, 1, 1, o, a.data());
  crop_resize_normalize(half, box, static_cast<double>(half.width) / w,
                        static_cast<double>(half.height) / h, o, b.data());
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += std::abs(a[i] - b[i]) * 255;
  EXPECT_LT(diff / static_cast<double>(a.size()), 6.0)
      << "mean absolute difference in pixel levels";
}

TEST(TransformTest, AnInvalidJpegIsAnError) {
  JpegDecoder decoder;
  RgbImage out;
  std::vector<uint8_t> junk = {1, 2, 3, 4};
  Status s = decoder.decode(junk, 1, 1, out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("JPEG"), std::string::npos);
}

}  // namespace
}  // namespace colo
