#include "data/loader_process.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <ostream>
#include <sstream>

#include "common/user_file.h"
#include "data/loader_server.h"

namespace colo {
namespace {

bool can_connect(const std::string& socket_name) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t n = std::min(socket_name.size(), sizeof addr.sun_path - 1);
  std::memcpy(addr.sun_path + 1, socket_name.data(), n);
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  ::close(fd);
  return ok;
}

// The loader's files are in its directory, which is its user's (maybe not
// colo's): read as that user's files, within bounds.
std::string log_tail(const std::string& path) {
  Result<std::string> text = read_user_file_tail(path, 64 << 10);
  if (!text.ok()) return "";
  std::istringstream in(*text);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

std::string read_stats(const std::string& path) {
  Result<std::string> text = read_user_file(path, 1 << 20);
  return text.ok() ? *text : "";
}

}  // namespace

SharedLoaders::SharedLoaders(Clock& clock, SharedLoadersOptions options)
    : clock_(clock), options_(std::move(options)), supervisor_(clock) {}

SharedLoaders::~SharedLoaders() {
  bool running = false;
  for (const Loader& l : loaders_) running |= !l.ended;
  if (running) (void)stop();
}

Status SharedLoaders::start(std::vector<LoaderOptions> loaders, std::ostream& out) {
  if (Status s = launch(std::move(loaders), out); !s.ok()) return s;
  while (true) {
    Result<bool> all = ready();
    if (!all.ok()) {
      (void)stop();
      return all.error();
    }
    if (*all) return OkStatus();
    clock_.sleep_for_ms(20);
  }
}

Status SharedLoaders::launch(std::vector<LoaderOptions> loaders, std::ostream& out) {
  for (LoaderOptions& o : loaders) {
    o.parent_pid = getpid();
    o.state_dir = options_.state_dir;
    o.stats_path = fmt::format("{}/data-{}.stats.json", options_.logs_dir, o.name);
    o = with_default_names(std::move(o), getpid());
    Loader loader;
    loader.log_path = fmt::format("{}/data-{}.log", options_.logs_dir, o.name);
    std::remove(o.stats_path.c_str());
    LaunchRequest request;
    request.job_name = "data:" + o.name;
    request.argv = {options_.colo_binary, "data", "serve"};
    for (std::string& a : serve_arguments(o)) request.argv.push_back(std::move(a));
    request.working_dir = options_.logs_dir;
    request.log_path = loader.log_path;
    request.run_as = options_.run_as;
    loader.options = std::move(o);
    Result<pid_t> pid = supervisor_.start(request);
    if (!pid.ok()) {
      (void)stop();
      return pid.error().with_context("data loader " + loader.options.name);
    }
    loader.pid = *pid;
    loader.launched_ms = clock_.monotonic_ms();
    const LoaderOptions& started = loader.options;
    out << fmt::format("data loader '{}': {} ({} threads{}), pid {}, log {}\n", started.name,
                       started.path, started.threads,
                       started.cpus.empty() ? "" : " on CPUs " + started.cpus, *pid,
                       loader.log_path);
    loaders_.push_back(std::move(loader));
  }
  return OkStatus();
}

Result<bool> SharedLoaders::ready() {
  for (const FinishedJob& f : supervisor_.poll()) {
    for (Loader& l : loaders_) {
      if (l.pid == f.pid) l.ended = true;
    }
  }
  bool all = true;
  for (Loader& l : loaders_) {
    if (l.ready) continue;
    if (l.ended) {
      return Error(fmt::format("data loader '{}' could not start: {} (log {})", l.options.name,
                               log_tail(l.log_path), l.log_path));
    }
    if (can_connect(l.options.socket_name)) {
      l.ready = true;
      continue;
    }
    if (clock_.monotonic_ms() - l.launched_ms > options_.ready_timeout_ms) {
      return Error(fmt::format("data loader '{}' was not ready after {} s (log {})", l.options.name,
                               options_.ready_timeout_ms / 1000, l.log_path));
    }
    all = false;
  }
  return all;
}

std::map<std::string, std::string> SharedLoaders::environment_for(
    const std::string& dataset) const {
  for (const Loader& l : loaders_) {
    if (l.options.name == dataset && !l.ended) return {{kDataSocketEnv, l.options.socket_name}};
  }
  return {};
}

std::vector<std::string> SharedLoaders::poll() {
  std::vector<std::string> out;
  for (const FinishedJob& f : supervisor_.poll()) {
    for (Loader& l : loaders_) {
      if (l.pid != f.pid) continue;
      l.ended = true;
      out.push_back(fmt::format("data loader '{}' ended: {} (log {})", l.options.name,
                                f.exit.reason.empty() ? to_string(f.exit.state) : f.exit.reason,
                                l.log_path));
    }
  }
  return out;
}

std::vector<LoaderOutcome> SharedLoaders::stop() {
  for (const Loader& l : loaders_)
    if (!l.ended) supervisor_.stop(l.pid, options_.stop_grace_ms);
  const int64_t deadline = clock_.monotonic_ms() + options_.stop_grace_ms + 5'000;
  while (supervisor_.running_count() > 0 && clock_.monotonic_ms() < deadline) {
    (void)poll();
    if (supervisor_.running_count() > 0) clock_.sleep_for_ms(20);
  }
  std::vector<LoaderOutcome> outcomes;
  for (Loader& l : loaders_) {
    l.ended = true;
    LoaderOutcome o{l.options.name, l.options.path, l.pid, read_stats(l.options.stats_path), ""};
    if (o.stats_json.empty())
      o.note = fmt::format("the loader left no statistics (log {})", l.log_path);
    outcomes.push_back(std::move(o));
  }
  loaders_.clear();
  return outcomes;
}

}  // namespace colo
