// Datasets the shared loader reads, behind one interface:
//
//   imagefolder  <root>/<class>/<image>.jpg (torchvision's ImageFolder layout:
//                classes are the sorted subdirectory names, labels their
//                positions; .jpg/.jpeg files, sorted by path)
//   cifar10      CIFAR-10's binary version: a directory with data_batch_1.bin
//                .. data_batch_5.bin (or test_batch.bin), or one such file;
//                records of 1 label byte + 3072 bytes of 32x32 RGB planes
//   packed       colo's own: one file of concatenated JPEGs with an index,
//                written by `colo data pack`, read through mmap (no open()
//                per sample, sequential on disk)
//
// read() is thread-safe: decoding threads call it concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace colo {

enum class DatasetFormat { kImageFolder, kCifar10, kPacked };
const char* to_string(DatasetFormat format);
// "imagefolder", "cifar10" or "packed".
Result<DatasetFormat> parse_dataset_format(const std::string& text);

// One sample as stored: JPEG bytes, or raw RGB pixels (interleaved).
struct StoredSample {
  bool jpeg = true;
  std::span<const uint8_t> bytes;  // valid until the next read() with the same scratch
  int width = 0;                   // raw pixels only
  int height = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual DatasetFormat format() const = 0;
  virtual size_t size() const = 0;
  virtual const std::vector<std::string>& classes() const = 0;
  virtual int label(size_t index) const = 0;
  // Where sample `index` is, for messages ("train/cat/0001.jpg", "data_batch_2.bin #17").
  virtual std::string where(size_t index) const = 0;
  // The sample's stored bytes; `scratch` may hold them.
  virtual Result<StoredSample> read(size_t index, std::vector<uint8_t>& scratch) const = 0;
};

// Opens `path` as `format`, or guesses it (a file starting with the packed
// magic, a directory of CIFAR-10 .bin files or a .bin file, else ImageFolder).
// An empty dataset is an error.
Result<std::unique_ptr<Dataset>> open_dataset(const std::string& path,
                                              std::optional<DatasetFormat> format = std::nullopt);

// Writes every sample of an ImageFolder or packed dataset (JPEG samples) to
// `out_path` in the packed format. `progress(done, total)` is called now and
// then.
Status write_packed(const Dataset& dataset, const std::string& out_path,
                    const std::function<void(size_t, size_t)>& progress = {});

}  // namespace colo
