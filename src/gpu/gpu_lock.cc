#include "gpu/gpu_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/paths.h"
#include "common/users.h"

namespace colo {
namespace {

constexpr const char* kRunLockDir = "/run/colo/locks";
constexpr const char* kTmpLockDir = "/tmp/colo-locks";

// Creates `dir` (and parents) with mode 1777 for the last component.
Status make_shared_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return OkStatus();
  if (Status s = make_dirs(dir, 0755); !s.ok()) return s;
  if (::chmod(dir.c_str(), 01777) != 0) {
    return Error(fmt::format("cannot make the GPU lock directory {} shared (chmod 1777): {}", dir,
                             std::strerror(errno)));
  }
  return OkStatus();
}

std::string lock_path(const std::string& dir, const std::string& uuid) {
  std::string name;
  for (char c : uuid) name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return fmt::format("{}/{}.lock", dir, name);
}

// Opens (creating if needed) a lock file: without O_CREAT first, since the
// kernel may refuse O_CREAT on another user's file in a sticky directory.
// Never through a symbolic link, and only a regular file: the directory is
// shared, and a colo running as root writes in what it opens.
int open_lock_file(const std::string& path) {
  int fd = open_regular_file(path, O_RDWR);
  if (fd >= 0 || errno != ENOENT) return fd;
  fd = open_regular_file(path, O_RDWR | O_CREAT | O_EXCL, 0666);
  if (fd >= 0) {
    (void)::fchmod(fd, 0666);  // every user's colo writes who holds it
    return fd;
  }
  return errno == EEXIST ? open_regular_file(path, O_RDWR) : -1;
}

std::optional<GpuLockHolder> read_holder(int fd) {
  char buf[4096];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(std::string(buf, static_cast<size_t>(n)), nullptr,
                                           /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  GpuLockHolder h;
  h.pid = j.value("pid", 0);
  h.uid = j.value("uid", 0u);
  h.user = j.value("user", "");
  h.since_ms = j.value("since_ms", int64_t{0});
  h.command = j.value("command", "");
  return h;
}

void write_holder(int fd, const GpuLockHolder& h) {
  std::string text = nlohmann::json{{"pid", h.pid},
                                    {"uid", h.uid},
                                    {"user", h.user},
                                    {"since_ms", h.since_ms},
                                    {"command", h.command}}
                         .dump() +
                     "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, text.data(), text.size(), 0);
}

std::string holder_text(int fd) {
  std::optional<GpuLockHolder> h = read_holder(fd);
  return h ? describe(*h) : "another process (its lock file does not say who)";
}

}  // namespace

std::string default_gpu_lock_dir() {
  if (const char* dir = std::getenv("COLO_LOCK_DIR"); dir != nullptr && *dir != '\0') return dir;
  struct stat st {};
  if (::stat(kRunLockDir, &st) == 0 && S_ISDIR(st.st_mode) && ::access(kRunLockDir, W_OK) == 0)
    return kRunLockDir;
  if (geteuid() == 0 && make_shared_dir(kRunLockDir).ok()) return kRunLockDir;
  return kTmpLockDir;
}

std::string gpu_lock_dir(const std::string& named, bool simulated, const std::string& state_dir) {
  if (!named.empty()) return named;
  if (const char* dir = std::getenv("COLO_LOCK_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (simulated) return state_dir + "/sim-locks";
  return default_gpu_lock_dir();
}

Status create_machine_lock_file(const std::string& dir, const std::string& name) {
  if (Status s = make_shared_dir(dir); !s.ok()) return s;
  const std::string path = lock_path(dir, name);
  const int fd = open_lock_file(path);
  if (fd < 0)
    return Error(fmt::format("cannot create the lock file {}: {}", path, std::strerror(errno)));
  ::close(fd);
  return OkStatus();
}

std::string describe(const GpuLockHolder& holder) {
  std::time_t t = static_cast<std::time_t>(holder.since_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return fmt::format("colo pid {} (user {}) since {}{}", holder.pid,
                     holder.user.empty() ? std::to_string(holder.uid) : holder.user, when,
                     holder.command.empty() ? "" : ": " + holder.command);
}

Status GpuLocks::lock(const std::string& path, const std::string& what, const std::string& refusal,
                      const GpuLockOptions& options, const GpuLockHolder& me, Clock& clock) {
  int fd = open_lock_file(path);
  if (fd < 0) {
    return Error(
        fmt::format("cannot open the lock file {} of {}: {} (set COLO_LOCK_DIR to "
                    "use another directory)",
                    path, what, std::strerror(errno)));
  }
  held_.push_back({path, fd});
  std::string last_holder;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK)
      return Error(fmt::format("cannot lock {} ({}): flock: {}", what, path, std::strerror(errno)));
    std::string holder = holder_text(fd);
    if (!options.wait) return Error(fmt::format("{} is in use by {}; {}", what, holder, refusal));
    if (holder != last_holder && options.on_wait)
      options.on_wait(fmt::format("waiting for {}, in use by {}", what, holder));
    last_holder = holder;
    if (options.stop_requests != nullptr && options.stop_requests->load() > 0)
      return Error(fmt::format("stopped while waiting for {}", what));
    clock.sleep_for_ms(options.poll_ms);
  }
  write_holder(fd, me);
  return OkStatus();
}

Result<std::unique_ptr<GpuLocks>> GpuLocks::acquire(const std::vector<DeviceInfo>& devices,
                                                    const GpuLockOptions& options, Clock& clock) {
  if (Status s = make_shared_dir(options.dir); !s.ok())
    return s.error().with_context("GPU locks (set COLO_LOCK_DIR to use another directory)");
  std::vector<const DeviceInfo*> order;
  for (const DeviceInfo& d : devices) order.push_back(&d);
  std::sort(order.begin(), order.end(),
            [](const DeviceInfo* a, const DeviceInfo* b) { return a->uuid < b->uuid; });

  GpuLockHolder me{getpid(), geteuid(), user_name_of(geteuid()), clock.now_ms(), options.command};
  std::unique_ptr<GpuLocks> locks(new GpuLocks());
  for (const DeviceInfo* d : order) {
    Status s = locks->lock(
        lock_path(options.dir, d->uuid), fmt::format("GPU {} ({})", d->index, d->uuid),
        "wait for it (leave out --no-wait), choose other GPUs with --gpus, or submit to that "
        "colo if it is a service (colo submit)",
        options, me, clock);
    if (!s.ok()) return s.error();
  }
  return locks;
}

Result<std::unique_ptr<GpuLocks>> GpuLocks::acquire_one_per_machine(const std::string& name,
                                                                    const std::string& what,
                                                                    const GpuLockOptions& options,
                                                                    Clock& clock) {
  if (Status s = make_shared_dir(options.dir); !s.ok())
    return s.error().with_context(what + "'s lock (set COLO_LOCK_DIR to use another directory)");
  GpuLockHolder me{getpid(), geteuid(), user_name_of(geteuid()), clock.now_ms(), options.command};
  std::unique_ptr<GpuLocks> locks(new GpuLocks());
  Status s = locks->lock(lock_path(options.dir, name), what, "try again once it is free", options,
                         me, clock);
  if (!s.ok()) return s.error();
  return locks;
}

GpuLocks::~GpuLocks() {
  for (Held& h : held_) {
    if (h.fd >= 0) ::close(h.fd);  // releases the flock
  }
}

std::vector<std::string> GpuLocks::paths() const {
  std::vector<std::string> out;
  for (const Held& h : held_) out.push_back(h.path);
  return out;
}

std::optional<GpuLockHolder> GpuLocks::holder_of(const std::string& dir, const std::string& uuid) {
  int fd = ::open(lock_path(dir, uuid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<GpuLockHolder> holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    holder = read_holder(fd);
    if (!holder) holder = GpuLockHolder{};
  } else {
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return holder;
}

}  // namespace colo
