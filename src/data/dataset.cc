#include "data/dataset.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "common/replace_file.h"

namespace colo {
namespace fs = std::filesystem;
namespace {

constexpr char kPackedMagic[8] = {'C', 'O', 'L', 'O', 'P', 'A', 'K', '1'};
constexpr size_t kCifarRecord = 1 + 3 * 32 * 32;

// The packed file's fixed header; all integers little-endian (the host's).
struct PackedHeader {
  char magic[8];
  uint32_t version;
  uint32_t class_count;
  uint64_t sample_count;
  uint64_t names_offset;
  uint64_t names_size;
  uint64_t index_offset;
  uint64_t data_offset;
  uint64_t reserved;
};
static_assert(sizeof(PackedHeader) == 64);

struct PackedEntry {
  uint64_t offset;  // from the start of the file
  uint32_t size;
  uint32_t label;
};
static_assert(sizeof(PackedEntry) == 16);

std::string errno_text() { return std::strerror(errno); }

// A read-only mapping of a whole file; unmapped on destruction.
class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error(fmt::format("cannot open {}: {}", path, errno_text()));
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_size == 0) {
      ::close(fd);
      return Error(fmt::format("{} is empty or unreadable", path));
    }
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return Error(fmt::format("cannot map {}: {}", path, errno_text()));
    return std::unique_ptr<MappedFile>(
        new MappedFile(static_cast<const uint8_t*>(p), static_cast<size_t>(st.st_size)));
  }
  ~MappedFile() { munmap(const_cast<uint8_t*>(data_), size_); }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  const uint8_t* data_;
  size_t size_;
};

bool is_jpeg_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg";
}

class ImageFolderDataset final : public Dataset {
 public:
  static Result<std::unique_ptr<Dataset>> open(const std::string& root) {
    std::error_code ec;
    if (!fs::is_directory(root, ec))
      return Error(
          fmt::format("{} is not a directory (an ImageFolder dataset is a directory "
                      "with one subdirectory of JPEG files per class)",
                      root));
    auto ds = std::make_unique<ImageFolderDataset>();
    ds->root_ = root;
    std::vector<fs::path> class_dirs;
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.is_directory(ec)) class_dirs.push_back(e.path());
    if (ec) return Error(fmt::format("cannot list {}: {}", root, ec.message()));
    std::sort(class_dirs.begin(), class_dirs.end());
    size_t other_files = 0;
    for (const fs::path& dir : class_dirs) {
      std::vector<std::string> files;
      for (auto it = fs::recursive_directory_iterator(dir, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        if (is_jpeg_name(it->path())) {
          files.push_back(it->path().lexically_relative(root).string());
        } else {
          ++other_files;
        }
      }
      if (ec) return Error(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
      if (files.empty()) continue;  // torchvision skips classes without images too
      std::sort(files.begin(), files.end());
      const int label = static_cast<int>(ds->classes_.size());
      ds->classes_.push_back(dir.filename().string());
      for (std::string& f : files) {
        ds->files_.push_back(std::move(f));
        ds->labels_.push_back(label);
      }
    }
    if (ds->files_.empty()) {
      return Error(fmt::format(
          "{}: no JPEG files (.jpg, .jpeg) in its subdirectories{}; an ImageFolder dataset is "
          "<root>/<class>/<image>.jpg (colo data make-synthetic writes one)",
          root,
          other_files > 0 ? fmt::format(" ({} other files: only JPEG is decoded)", other_files)
                          : ""));
    }
    return std::unique_ptr<Dataset>(std::move(ds));
  }

  DatasetFormat format() const override { return DatasetFormat::kImageFolder; }
  size_t size() const override { return files_.size(); }
  const std::vector<std::string>& classes() const override { return classes_; }
  int label(size_t index) const override { return labels_[index]; }
  std::string where(size_t index) const override { return root_ + "/" + files_[index]; }

  Result<StoredSample> read(size_t index, std::vector<uint8_t>& scratch) const override {
    const std::string path = where(index);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error(fmt::format("cannot open {}: {}", path, errno_text()));
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      ::close(fd);
      return Error(fmt::format("cannot stat {}: {}", path, errno_text()));
    }
    scratch.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < scratch.size()) {
      ssize_t n = ::read(fd, scratch.data() + done, scratch.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    if (done != scratch.size()) return Error(fmt::format("cannot read {}", path));
    return StoredSample{true, {scratch.data(), scratch.size()}, 0, 0};
  }

  std::string root_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;  // relative to root_
  std::vector<int> labels_;
};

class Cifar10Dataset final : public Dataset {
 public:
  static Result<std::unique_ptr<Dataset>> open(const std::string& path) {
    std::error_code ec;
    std::vector<std::string> files;
    fs::path meta;
    if (fs::is_directory(path, ec)) {
      for (const auto& e : fs::directory_iterator(path, ec)) {
        std::string name = e.path().filename().string();
        if (name.rfind("data_batch_", 0) == 0 && e.path().extension() == ".bin")
          files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());
      if (files.empty() && fs::exists(fs::path(path) / "test_batch.bin", ec))
        files.push_back((fs::path(path) / "test_batch.bin").string());
      meta = fs::path(path) / "batches.meta.txt";
    } else {
      files.push_back(path);
      meta = fs::path(path).parent_path() / "batches.meta.txt";
    }
    if (files.empty())
      return Error(fmt::format("{}: no CIFAR-10 data_batch_*.bin or test_batch.bin", path));
    auto ds = std::make_unique<Cifar10Dataset>();
    for (const std::string& f : files) {
      Result<std::unique_ptr<MappedFile>> m = MappedFile::open(f);
      if (!m.ok()) return m.error();
      if ((*m)->bytes().size() % kCifarRecord != 0) {
        return Error(
            fmt::format("{} is {} bytes, not a whole number of CIFAR-10 records "
                        "({} bytes each: 1 label byte, 3072 pixel bytes)",
                        f, (*m)->bytes().size(), kCifarRecord));
      }
      const size_t records = (*m)->bytes().size() / kCifarRecord;
      for (size_t r = 0; r < records; ++r) {
        const uint8_t label = (*m)->bytes()[r * kCifarRecord];
        if (label > 9) {
          return Error(
              fmt::format("{} record {}: label {} is not 0..9: not a CIFAR-10 binary "
                          "file",
                          f, r, label));
        }
        ds->records_.push_back({ds->files_.size(), r});
      }
      ds->names_.push_back(f);
      ds->files_.push_back(std::move(*m));
    }
    std::ifstream in(meta);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) ds->classes_.push_back(line);
    if (ds->classes_.size() != 10) {
      ds->classes_.clear();
      for (int i = 0; i < 10; ++i) ds->classes_.push_back(std::to_string(i));
    }
    return std::unique_ptr<Dataset>(std::move(ds));
  }

  DatasetFormat format() const override { return DatasetFormat::kCifar10; }
  size_t size() const override { return records_.size(); }
  const std::vector<std::string>& classes() const override { return classes_; }
  int label(size_t index) const override { return record(index)[0]; }
  std::string where(size_t index) const override {
    return fmt::format("{} #{}", names_[records_[index].file], records_[index].record);
  }
  Result<StoredSample> read(size_t index, std::vector<uint8_t>& scratch) const override {
    const uint8_t* planes = record(index) + 1;
    constexpr size_t kPixels = size_t{32} * 32;
    scratch.resize(kPixels * 3);
    for (size_t p = 0; p < kPixels; ++p) {
      scratch[p * 3] = planes[p];
      scratch[p * 3 + 1] = planes[kPixels + p];
      scratch[p * 3 + 2] = planes[2 * kPixels + p];
    }
    return StoredSample{false, {scratch.data(), scratch.size()}, 32, 32};
  }

  struct Record {
    size_t file;
    size_t record;
  };
  const uint8_t* record(size_t index) const {
    const Record& r = records_[index];
    return files_[r.file]->bytes().data() + r.record * kCifarRecord;
  }

  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<std::string> names_;
  std::vector<Record> records_;
  std::vector<std::string> classes_;
};

class PackedDataset final : public Dataset {
 public:
  static Result<std::unique_ptr<Dataset>> open(const std::string& path) {
    Result<std::unique_ptr<MappedFile>> m = MappedFile::open(path);
    if (!m.ok()) return m.error();
    std::span<const uint8_t> bytes = (*m)->bytes();
    PackedHeader h{};
    if (bytes.size() < sizeof h ||
        std::memcmp(bytes.data(), kPackedMagic, sizeof kPackedMagic) != 0) {
      return Error(
          fmt::format("{} is not a colo packed dataset (write one with colo data pack)", path));
    }
    std::memcpy(&h, bytes.data(), sizeof h);
    auto bad = [&](const std::string& what) {
      return Error(
          fmt::format("{}: damaged packed dataset: {}; write it again with colo data "
                      "pack",
                      path, what));
    };
    if (h.version != 1) return bad(fmt::format("version {} (this colo reads 1)", h.version));
    if (h.names_offset + h.names_size > bytes.size() ||
        h.index_offset + h.sample_count * sizeof(PackedEntry) > bytes.size())
      return bad("the header points past the end of the file");
    auto ds = std::make_unique<PackedDataset>();
    ds->path_ = path;
    std::string names(reinterpret_cast<const char*>(bytes.data() + h.names_offset), h.names_size);
    size_t start = 0;
    while (start < names.size()) {
      size_t end = names.find('\n', start);
      if (end == std::string::npos) end = names.size();
      ds->classes_.push_back(names.substr(start, end - start));
      start = end + 1;
    }
    if (ds->classes_.size() != h.class_count) return bad("class names do not match the count");
    ds->entries_.resize(h.sample_count);
    std::memcpy(ds->entries_.data(), bytes.data() + h.index_offset,
                h.sample_count * sizeof(PackedEntry));
    for (size_t i = 0; i < ds->entries_.size(); ++i) {
      const PackedEntry& e = ds->entries_[i];
      if (e.offset + e.size > bytes.size() || e.label >= h.class_count)
        return bad(fmt::format("sample {} points past the end or has label {}", i, e.label));
    }
    if (ds->entries_.empty()) return bad("no samples");
    ds->file_ = std::move(*m);
    return std::unique_ptr<Dataset>(std::move(ds));
  }

  DatasetFormat format() const override { return DatasetFormat::kPacked; }
  size_t size() const override { return entries_.size(); }
  const std::vector<std::string>& classes() const override { return classes_; }
  int label(size_t index) const override { return static_cast<int>(entries_[index].label); }
  std::string where(size_t index) const override { return fmt::format("{} #{}", path_, index); }
  Result<StoredSample> read(size_t index, std::vector<uint8_t>& /*scratch*/) const override {
    const PackedEntry& e = entries_[index];
    return StoredSample{true, file_->bytes().subspan(e.offset, e.size), 0, 0};
  }

  std::string path_;
  std::unique_ptr<MappedFile> file_;
  std::vector<PackedEntry> entries_;
  std::vector<std::string> classes_;
};

bool starts_with_packed_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof kPackedMagic] = {};
  in.read(magic, sizeof magic);
  return in && std::memcmp(magic, kPackedMagic, sizeof magic) == 0;
}

bool looks_like_cifar(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return fs::path(path).extension() == ".bin";
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.path().extension() == ".bin" &&
        (e.path().filename().string().rfind("data_batch_", 0) == 0 ||
         e.path().filename() == "test_batch.bin"))
      return true;
  }
  return false;
}

}  // namespace

const char* to_string(DatasetFormat format) {
  switch (format) {
    case DatasetFormat::kImageFolder:
      return "imagefolder";
    case DatasetFormat::kCifar10:
      return "cifar10";
    case DatasetFormat::kPacked:
      return "packed";
  }
  return "?";
}

Result<DatasetFormat> parse_dataset_format(const std::string& text) {
  for (DatasetFormat f :
       {DatasetFormat::kImageFolder, DatasetFormat::kCifar10, DatasetFormat::kPacked}) {
    if (text == to_string(f)) return f;
  }
  return Error(
      fmt::format("unknown dataset format '{}': use imagefolder, cifar10 or packed", text));
}

Result<std::unique_ptr<Dataset>> open_dataset(const std::string& path,
                                              std::optional<DatasetFormat> format) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Error(fmt::format("dataset {} does not exist", path));
  if (!format) {
    if (fs::is_regular_file(path, ec) && starts_with_packed_magic(path)) {
      format = DatasetFormat::kPacked;
    } else if (looks_like_cifar(path)) {
      format = DatasetFormat::kCifar10;
    } else {
      format = DatasetFormat::kImageFolder;
    }
  }
  switch (*format) {
    case DatasetFormat::kImageFolder:
      return ImageFolderDataset::open(path);
    case DatasetFormat::kCifar10:
      return Cifar10Dataset::open(path);
    case DatasetFormat::kPacked:
      return PackedDataset::open(path);
  }
  return Error("unknown dataset format");
}

Status write_packed(const Dataset& dataset, const std::string& out_path,
                    const std::function<void(size_t, size_t)>& progress) {
  if (dataset.format() == DatasetFormat::kCifar10)
    return Error(
        "colo data pack packs JPEG datasets (imagefolder); CIFAR-10's binary files are "
        "already packed: read them directly");
  auto pack = [&](int fd, const std::string&) -> Status {
    // Buffered writes to the file replace_file made (a stream of its own
    // descriptor, which fclose closes).
    std::unique_ptr<FILE, int (*)(FILE*)> out(::fdopen(::dup(fd), "wb"), &::fclose);
    if (!out) return Error(errno_text());
    std::string names;
    for (size_t i = 0; i < dataset.classes().size(); ++i)
      names += (i > 0 ? "\n" : "") + dataset.classes()[i];
    PackedHeader h{};
    std::memcpy(h.magic, kPackedMagic, sizeof kPackedMagic);
    h.version = 1;
    h.class_count = static_cast<uint32_t>(dataset.classes().size());
    h.sample_count = dataset.size();
    h.names_offset = sizeof h;
    h.names_size = names.size();
    h.index_offset = h.names_offset + h.names_size;
    h.data_offset = h.index_offset + h.sample_count * sizeof(PackedEntry);
    std::vector<PackedEntry> index(dataset.size());
    bool written = ::fseeko(out.get(), static_cast<off_t>(h.data_offset), SEEK_SET) == 0;
    uint64_t offset = h.data_offset;
    std::vector<uint8_t> scratch;
    for (size_t i = 0; i < dataset.size() && written; ++i) {
      Result<StoredSample> s = dataset.read(i, scratch);
      if (!s.ok()) return s.error();
      written = std::fwrite(s->bytes.data(), 1, s->bytes.size(), out.get()) == s->bytes.size();
      index[i] = {offset, static_cast<uint32_t>(s->bytes.size()),
                  static_cast<uint32_t>(dataset.label(i))};
      offset += s->bytes.size();
      if (progress && (i % 256 == 0 || i + 1 == dataset.size())) progress(i + 1, dataset.size());
    }
    const size_t index_bytes = index.size() * sizeof(PackedEntry);
    written = written && ::fseeko(out.get(), 0, SEEK_SET) == 0 &&
              std::fwrite(&h, sizeof h, 1, out.get()) == 1 &&
              std::fwrite(names.data(), 1, names.size(), out.get()) == names.size() &&
              std::fwrite(index.data(), 1, index_bytes, out.get()) == index_bytes;
    if (std::fclose(out.release()) != 0 || !written)
      return Error(fmt::format("{}: disk full?", errno_text()));
    return OkStatus();
  };
  return replace_file_with(out_path, pack);
}

}  // namespace colo
