#include "data/jpeg_codec.h"

#include <fmt/format.h>
#include <turbojpeg.h>

namespace colo {

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {}

JpegDecoder::~JpegDecoder() {
  if (handle_ != nullptr) tjDestroy(handle_);
}

Result<JpegHeader> JpegDecoder::header(std::span<const uint8_t> jpeg) {
  if (handle_ == nullptr) return Error("libjpeg-turbo: cannot create a decompressor");
  int width = 0;
  int height = 0;
  int subsampling = 0;
  int colorspace = 0;
  if (tjDecompressHeader3(handle_, jpeg.data(), static_cast<unsigned long>(jpeg.size()), &width,
                          &height, &subsampling, &colorspace) != 0) {
    return Error(fmt::format("not a readable JPEG: {}", tjGetErrorStr2(handle_)));
  }
  return JpegHeader{width, height};
}

Status JpegDecoder::decode(std::span<const uint8_t> jpeg, int min_width, int min_height,
                           RgbImage& out) {
  Result<JpegHeader> h = header(jpeg);
  if (!h.ok()) return h.error();
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  int width = h->width;
  int height = h->height;
  for (int i = 0; i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num > f.denom) continue;  // only shrinking
    const int w = TJSCALED(h->width, f);
    const int h2 = TJSCALED(h->height, f);
    if (w >= min_width && h2 >= min_height && w * h2 < width * height) {
      width = w;
      height = h2;
    }
  }
  out.width = width;
  out.height = height;
  out.pixels.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  if (tjDecompress2(handle_, jpeg.data(), static_cast<unsigned long>(jpeg.size()),
                    out.pixels.data(), width, 0, height, TJPF_RGB, TJFLAG_FASTDCT) != 0) {
    // A warning (e.g. premature end of data) still leaves a usable image.
    if (tjGetErrorCode(handle_) != TJERR_WARNING)
      return Error(fmt::format("cannot decode JPEG: {}", tjGetErrorStr2(handle_)));
  }
  return OkStatus();
}

Result<std::vector<uint8_t>> encode_jpeg(const RgbImage& image, int quality) {
  tjhandle handle = tjInitCompress();
  if (handle == nullptr) return Error("libjpeg-turbo: cannot create a compressor");
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  int rc = tjCompress2(handle, image.pixels.data(), image.width, 0, image.height, TJPF_RGB, &buffer,
                       &size, TJSAMP_420, quality, 0);
  std::string message = rc != 0 ? tjGetErrorStr2(handle) : "";
  std::vector<uint8_t> out;
  if (rc == 0) out.assign(buffer, buffer + size);
  tjFree(buffer);
  tjDestroy(handle);
  if (rc != 0) return Error(fmt::format("cannot encode JPEG: {}", message));
  return out;
}

}  // namespace colo
