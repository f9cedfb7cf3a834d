#include "data/dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "data/jpeg_codec.h"
#include "data/synthetic.h"

namespace colo {
namespace {
namespace fs = std::filesystem;

class DatasetTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("colo-dataset-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(DatasetTest, SyntheticImageFolderHasRealJpegsOfVariedSizes) {
  SyntheticOptions s;
  s.images = 30;
  s.classes = 3;
  s.size = 64;
  s.threads = 2;
  int64_t last_progress = 0;
  ASSERT_TRUE(
      make_synthetic(s, path("syn"), [&](int64_t done, int64_t) { last_progress = done; }).ok());
  EXPECT_EQ(last_progress, 30);
  Result<std::unique_ptr<Dataset>> ds = open_dataset(path("syn"));
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  EXPECT_EQ((*ds)->format(), DatasetFormat::kImageFolder);
  ASSERT_EQ((*ds)->size(), 30U);
  EXPECT_EQ((*ds)->classes(), (std::vector<std::string>{"class_000", "class_001", "class_002"}));
  JpegDecoder decoder;
  std::vector<uint8_t> scratch;
  std::set<std::pair<int, int>> sizes;
  for (size_t i = 0; i < (*ds)->size(); ++i) {
    Result<StoredSample> sample = (*ds)->read(i, scratch);
    ASSERT_TRUE(sample.ok());
    ASSERT_TRUE(sample->jpeg);
    Result<JpegHeader> h = decoder.header(sample->bytes);
    ASSERT_TRUE(h.ok());
    sizes.insert({h->width, h->height});
    // The file's class directory is its label.
    EXPECT_NE((*ds)->where(i).find((*ds)->classes()[static_cast<size_t>((*ds)->label(i))]),
              std::string::npos);
  }
  EXPECT_GT(sizes.size(), 20U);
  EXPECT_FALSE(make_synthetic(s, path("syn")).ok()) << "refuses a non-empty directory";
}

TEST_F(DatasetTest, PackedHoldsTheSameSamples) {
  SyntheticOptions s;
  s.images = 12;
  s.classes = 4;
  s.size = 32;
  ASSERT_TRUE(make_synthetic(s, path("syn")).ok());
  Result<std::unique_ptr<Dataset>> folder = open_dataset(path("syn"));
  ASSERT_TRUE(folder.ok());
  ASSERT_TRUE(write_packed(**folder, path("syn.colopack")).ok());
  Result<std::unique_ptr<Dataset>> packed = open_dataset(path("syn.colopack"));
  ASSERT_TRUE(packed.ok()) << packed.error().message();
  EXPECT_EQ((*packed)->format(), DatasetFormat::kPacked);
  ASSERT_EQ((*packed)->size(), (*folder)->size());
  EXPECT_EQ((*packed)->classes(), (*folder)->classes());
  std::vector<uint8_t> a;
  std::vector<uint8_t> b;
  for (size_t i = 0; i < (*packed)->size(); ++i) {
    EXPECT_EQ((*packed)->label(i), (*folder)->label(i));
    Result<StoredSample> x = (*folder)->read(i, a);
    Result<StoredSample> y = (*packed)->read(i, b);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_TRUE(std::equal(x->bytes.begin(), x->bytes.end(), y->bytes.begin(), y->bytes.end()));
  }
}

TEST_F(DatasetTest, Cifar10RecordsBecomeInterleavedPixels) {
  fs::create_directories(path("cifar"));
  std::ofstream out(path("cifar/data_batch_1.bin"), std::ios::binary);
  for (int r = 0; r < 3; ++r) {
    out.put(static_cast<char>(r + 4));
    for (int plane = 0; plane < 3; ++plane)
      for (int p = 0; p < 1024; ++p) out.put(static_cast<char>(plane * 100 + r));
  }
  out.close();
  Result<std::unique_ptr<Dataset>> ds = open_dataset(path("cifar"));
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  EXPECT_EQ((*ds)->format(), DatasetFormat::kCifar10);
  ASSERT_EQ((*ds)->size(), 3U);
  EXPECT_EQ((*ds)->classes().size(), 10U);
  EXPECT_EQ((*ds)->label(2), 6);
  std::vector<uint8_t> scratch;
  Result<StoredSample> s = (*ds)->read(1, scratch);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->jpeg);
  EXPECT_EQ(s->width, 32);
  EXPECT_EQ(s->bytes[0], 1);
  EXPECT_EQ(s->bytes[1], 101);
  EXPECT_EQ(s->bytes[2], 201);
}

TEST_F(DatasetTest, BadDatasetsSayWhatIsWrong) {
  auto message = [&](const std::string& p, std::optional<DatasetFormat> f = std::nullopt) {
    Result<std::unique_ptr<Dataset>> ds = open_dataset(p, f);
    return ds.ok() ? std::string("opened") : ds.error().message();
  };
  EXPECT_NE(message(path("missing")).find("does not exist"), std::string::npos);
  fs::create_directories(path("empty/a"));
  std::ofstream(path("empty/a/x.png")) << "png";
  EXPECT_NE(message(path("empty")).find("no JPEG files"), std::string::npos);
  EXPECT_NE(message(path("empty")).find("1 other files"), std::string::npos);
  std::ofstream(path("bad.bin"), std::ios::binary) << "xyz";
  EXPECT_NE(message(path("bad.bin")).find("whole number of CIFAR-10 records"), std::string::npos);
  std::ofstream(path("bad.colopack"), std::ios::binary) << "COLOPAK1" << std::string(56, '\x7f');
  EXPECT_NE(message(path("bad.colopack"), DatasetFormat::kPacked).find("damaged"),
            std::string::npos);
  EXPECT_FALSE(parse_dataset_format("tfrecord").ok());
}

}  // namespace
}  // namespace colo
