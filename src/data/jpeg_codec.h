// JPEG decoding and encoding through libjpeg-turbo's TurboJPEG API (linked
// statically from Debian's libturbojpeg0-dev).
//
// Decoding can shrink while it decodes (DCT scaling by 1/2, 1/4 or 1/8), which
// costs a fraction of a full decode: the loader asks for the smallest scale at
// which the crop it will take still has at least the output's resolution.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/result.h"

namespace colo {

// An 8-bit RGB image, rows top to bottom, pixels interleaved (R, G, B).
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3
};

struct JpegHeader {
  int width = 0;
  int height = 0;
};

// One TurboJPEG decompressor. Not thread-safe: one per decoding thread.
class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  Result<JpegHeader> header(std::span<const uint8_t> jpeg);
  // Decodes to RGB at the largest size whose width and height are at most
  // the full size and at least min_width x min_height (or at full size when
  // no DCT scale fits). `out` is reused across calls.
  Status decode(std::span<const uint8_t> jpeg, int min_width, int min_height, RgbImage& out);

 private:
  void* handle_;
};

// Encodes RGB pixels (4:2:0 subsampling, like most camera and web JPEGs).
Result<std::vector<uint8_t>> encode_jpeg(const RgbImage& image, int quality);

}  // namespace colo
