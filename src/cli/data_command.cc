// `colo data`: the shared data loader's commands.
//   make-synthetic  writes a synthetic JPEG dataset (ImageFolder layout)
//   pack            writes an ImageFolder dataset as one packed file
//   serve           runs a shared loader in the foreground (colo run starts
//                   one per [data.NAME] table this way)
//   cleanup         removes the shared memory of loaders whose colo died
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <string>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/paths.h"
#include "common/units.h"
#include "data/dataset.h"
#include "data/loader_server.h"
#include "data/ring_owner.h"
#include "data/synthetic.h"

namespace colo {
namespace {

// "\r<what>: done/total" on a terminal, nothing otherwise.
class TtyProgress {
 public:
  explicit TtyProgress(std::string what)
      : what_(std::move(what)),
        tty_(isatty(STDERR_FILENO) != 0),
        start_(std::chrono::steady_clock::now()) {}
  void operator()(int64_t done, int64_t total) {
    if (!tty_) return;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::cerr << fmt::format("\r{}: {}/{} ({:.0f}%, {:.1f}s)", what_, done, total,
                             total > 0
                                 ? 100.0 * static_cast<double>(done) / static_cast<double>(total)
                                 : 100.0,
                             s)
              << std::flush;
    if (done >= total) std::cerr << '\n';
  }

 private:
  std::string what_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

struct DataServeFlags {
  LoaderOptions options;
  std::string format;
  std::string ring = "1GiB";
  std::string lag_timeout = "30s";
  std::string scale;
  bool no_augment = false;
};

int data_serve_command(DataServeFlags& flags) {
  LoaderOptions& o = flags.options;
  if (!flags.format.empty()) {
    Result<DatasetFormat> f = parse_dataset_format(flags.format);
    if (!f.ok()) {
      std::cerr << "colo: --format: " << f.error().message() << "\n";
      return kExitBadInput;
    }
    o.format = *f;
  }
  Result<uint64_t> ring = parse_bytes(flags.ring);
  if (!ring.ok()) {
    std::cerr << "colo: --ring: " << ring.error().message() << "\n";
    return kExitBadInput;
  }
  o.ring_bytes = *ring;
  std::optional<int64_t> lag = duration_flag("--lag-timeout", flags.lag_timeout, 1);
  if (!lag) return kExitBadInput;
  o.lag_timeout_ms = *lag;
  if (!flags.scale.empty()) {
    double lo = 0;
    double hi = 0;
    char comma = 0;
    std::istringstream in(flags.scale);
    if (!(in >> lo >> comma >> hi) || comma != ',' || lo <= 0 || hi > 1 || lo > hi) {
      std::cerr << "colo: --scale: write the crop's area range as \"0.08,1\" (0 < min <= max "
                   "<= 1)\n";
      return kExitBadInput;
    }
    o.transform.scale_min = lo;
    o.transform.scale_max = hi;
  }
  o.transform.augment = !flags.no_augment;
  if (o.state_dir.empty()) o.state_dir = default_state_dir();
  if (o.parent_pid == 0) {
    Result<std::vector<std::string>> cleaned = cleanup_stale_data_loaders(o.state_dir);
    if (cleaned.ok()) {
      for (const std::string& line : *cleaned) std::cerr << line << "\n";
    }
  }
  Status s = run_loader(o, std::cerr);
  if (!s.ok()) {
    std::cerr << "colo: data serve: " << s.error().message() << "\n";
    return kExitEnvironment;
  }
  return kExitOk;
}

}  // namespace

void add_data_command(CLI::App& app, int& exit_code) {
  static SyntheticOptions synthetic;
  static std::string synthetic_out;
  static std::string pack_in;
  static std::string pack_out;
  static DataServeFlags serve;

  CLI::App* data = app.add_subcommand(
      "data", "Shared data loading: one loader feeds every job that names its dataset");
  data->require_subcommand(1);
  set_example(*data, "colo data make-synthetic /tmp/images --images 1000");

  CLI::App* make = data->add_subcommand(
      "make-synthetic",
      "Write a synthetic JPEG dataset (ImageFolder layout: OUT/class_NNN/img_NNNNNNN.jpg) of "
      "varied sizes and content, for tests and benchmarks");
  make->add_option("out", synthetic_out, "directory to create (must not exist or be empty)")
      ->required();
  make->add_option("--images", synthetic.images, "number of images")
      ->check(whole_number(1))
      ->capture_default_str();
  make->add_option("--size", synthetic.size,
                   "typical side in pixels; each side varies from 0.6x to 1.4x")
      ->check(CLI::Range(8, 8192))
      ->capture_default_str();
  make->add_option("--classes", synthetic.classes, "number of classes")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  make->add_option("--quality", synthetic.quality, "JPEG quality")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  make->add_option("--seed", synthetic.seed, "random seed")->capture_default_str();
  make->add_option("--threads", synthetic.threads, "encoding threads; 0: every core")
      ->capture_default_str();
  set_example(*make, "colo data make-synthetic /tmp/images --images 1000");
  make->callback([&exit_code] {
    TtyProgress progress("make-synthetic");
    Status s = make_synthetic(synthetic, synthetic_out,
                              [&](int64_t done, int64_t total) { progress(done, total); });
    if (!s.ok()) {
      std::cerr << "colo: " << s.error().message() << "\n";
      exit_code = kExitBadInput;
      return;
    }
    std::cout << fmt::format("wrote {} JPEG images in {} classes to {}\n", synthetic.images,
                             synthetic.classes, synthetic_out);
  });

  CLI::App* pack = data->add_subcommand(
      "pack",
      "Write an ImageFolder dataset as one packed file (an index and the JPEG bytes), "
      "which the loader reads without opening a file per image");
  pack->add_option("dataset", pack_in, "ImageFolder directory")->required();
  pack->add_option("out", pack_out, "packed file to write")->required();
  set_example(*pack, "colo data pack /tmp/images /tmp/images.colo");
  pack->callback([&exit_code] {
    Result<std::unique_ptr<Dataset>> ds = open_dataset(pack_in, DatasetFormat::kImageFolder);
    if (!ds.ok()) {
      std::cerr << "colo: " << ds.error().message() << "\n";
      exit_code = kExitBadInput;
      return;
    }
    TtyProgress progress("pack");
    Status s = write_packed(**ds, pack_out, [&](size_t done, size_t total) {
      progress(static_cast<int64_t>(done), static_cast<int64_t>(total));
    });
    if (!s.ok()) {
      std::cerr << "colo: " << s.error().message() << "\n";
      exit_code = kExitEnvironment;
      return;
    }
    std::cout << fmt::format("packed {} images in {} classes into {}\n", (*ds)->size(),
                             (*ds)->classes().size(), pack_out);
  });

  CLI::App* srv = data->add_subcommand(
      "serve",
      "Run a shared loader in the foreground until Ctrl-C (colo run starts one per "
      "[data.NAME] table); consumers connect with colo_data.Loader");
  LoaderOptions& o = serve.options;
  srv->add_option("dataset", o.path,
                  "ImageFolder directory, CIFAR-10 directory or .bin, or packed file")
      ->required();
  srv->add_option("--name", o.name, "the dataset's name (in messages and statistics)")
      ->capture_default_str();
  srv->add_option("--format", serve.format, "imagefolder, cifar10 or packed; default: guessed");
  srv->add_option("--size", o.transform.size, "output crops are SIZE x SIZE")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  srv->add_flag("--no-augment", serve.no_augment,
                "no random-resized-crop or flip: the centered square, resized (deterministic)");
  srv->add_option("--scale", serve.scale,
                  "random-resized-crop's area range, \"min,max\" (default 0.08,1)");
  srv->add_option("--threads", o.threads, "decoding threads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  srv->add_option("--ring", serve.ring, "shared memory for the ring")->capture_default_str();
  srv->add_option("--chunk", o.chunk_samples, "samples per ring slot")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  srv->add_option("--lag-timeout", serve.lag_timeout,
                  "detach a consumer that held the others back this long (net)")
      ->capture_default_str();
  srv->add_option("--max-consumers", o.max_consumers, "consumers served at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  srv->add_option("--seed", o.seed, "sample order and augmentation")->capture_default_str();
  srv->add_option("--cpus", o.cpus, "run on these CPUs only (\"0-3\", \"0,2,4-7\")");
  srv->add_option("--socket", o.socket_name,
                  "abstract socket name consumers connect to (COLO_DATA_SOCKET); default "
                  "colo-data-<pid>-<name>");
  srv->add_option("--shm", o.shm_name, "shared-memory name; default /colo-data-<pid>-<name>");
  srv->add_option("--state-dir", o.state_dir, "where ownership records go; default the state dir");
  srv->add_option("--stats", o.stats_path, "write final statistics (JSON) here");
  srv->add_option("--parent-pid", o.parent_pid, "stop when this process (colo) is gone")
      ->group("");  // set by colo run
  set_example(*srv, "colo data serve /tmp/images.colo --name images");
  srv->callback([&exit_code] { exit_code = data_serve_command(serve); });

  CLI::App* clean = data->add_subcommand(
      "cleanup", "Remove the shared memory of loaders whose colo died (colo run does this too)");
  set_example(*clean, "colo data cleanup");
  clean->callback([&exit_code] {
    Result<std::vector<std::string>> lines = cleanup_stale_data_loaders(default_state_dir());
    if (!lines.ok()) {
      std::cerr << "colo: " << lines.error().message() << "\n";
      exit_code = kExitEnvironment;
      return;
    }
    for (const std::string& line : *lines) std::cout << line << "\n";
    if (lines->empty()) std::cout << "nothing to clean up\n";
  });
}

}  // namespace colo
