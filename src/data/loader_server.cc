#include "data/loader_server.h"

#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <thread>

#include "common/replace_file.h"
#include "common/unique_fd.h"
#include "common/units.h"
#include "data/jpeg_codec.h"
#include "data/ring_broker.h"
#include "data/ring_memory.h"
#include "data/ring_owner.h"

namespace colo {
namespace {

using nlohmann::json;

int64_t monotonic_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

sockaddr_un abstract_address(const std::string& name, socklen_t& length) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  addr.sun_path[0] = '\0';
  const size_t n = std::min(name.size(), sizeof addr.sun_path - 1);
  std::memcpy(addr.sun_path + 1, name.data(), n);
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return addr;
}

// Chunks decoded by the worker threads, handed to the control thread.
class DecodePool {
 public:
  DecodePool(const Dataset& dataset, RingMemory& ring, const LoaderOptions& options, int event_fd)
      : dataset_(dataset), ring_(ring), options_(options), event_fd_(event_fd) {}
  ~DecodePool() { stop(); }

  void start(int threads) {
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { work(); });
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  void push(ChunkJob job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
      ++outstanding_;
    }
    ready_.notify_one();
  }
  size_t outstanding() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return outstanding_;
  }
  std::vector<uint64_t> take_done() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<uint64_t> out;
    out.swap(done_);
    outstanding_ -= out.size();
    return out;
  }
  std::vector<std::string> take_warnings() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    out.swap(warnings_);
    return out;
  }
  uint64_t samples_decoded() const { return samples_.load(); }
  uint64_t decode_errors() const { return errors_.load(); }

 private:
  void work() {
    JpegDecoder decoder;
    RgbImage image;
    std::vector<uint8_t> scratch;
    while (true) {
      ChunkJob job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fill(job, decoder, image, scratch);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.push_back(job.chunk);
      }
      uint64_t one = 1;
      ssize_t w = ::write(event_fd_, &one, sizeof one);
      (void)w;
    }
  }

  void fill(const ChunkJob& job, JpegDecoder& decoder, RgbImage& image,
            std::vector<uint8_t>& scratch) {
    const RingGeometry& g = ring_.geometry();
    uint8_t* slot = ring_.slot(job.slot);
    auto* labels = reinterpret_cast<int64_t*>(slot + g.labels_offset);
    auto* ids = reinterpret_cast<int64_t*>(slot + g.ids_offset);
    auto* images = reinterpret_cast<float*>(slot + g.images_offset);
    const size_t floats = g.sample_bytes() / sizeof(float);
    for (size_t i = 0; i < job.samples.size(); ++i) {
      const uint32_t sample = job.samples[i];
      labels[i] = dataset_.label(sample);
      ids[i] = sample;
      // Augmentation is a function of the seed and the stream position.
      std::mt19937_64 rng(options_.seed * 0x9E3779B97F4A7C15ULL + job.first_position + i);
      Status s = decode_one(sample, rng, decoder, image, scratch, images + i * floats);
      if (!s.ok()) {
        std::fill(images + i * floats, images + (i + 1) * floats, 0.0F);
        if (errors_.fetch_add(1) < 10) {
          std::lock_guard<std::mutex> lock(mutex_);
          warnings_.push_back(fmt::format("warning: {}: {} (the sample is served as zeros)",
                                          dataset_.where(sample), s.error().message()));
        }
      }
    }
    SlotHeader h{job.chunk, static_cast<uint32_t>(job.samples.size()), 0};
    std::memcpy(slot, &h, sizeof h);
    samples_.fetch_add(job.samples.size());
  }

  Status decode_one(uint32_t sample, std::mt19937_64& rng, JpegDecoder& decoder, RgbImage& image,
                    std::vector<uint8_t>& scratch, float* out) {
    Result<StoredSample> stored = dataset_.read(sample, scratch);
    if (!stored.ok()) return stored.error();
    const int size = options_.transform.size;
    if (!stored->jpeg) {
      image.width = stored->width;
      image.height = stored->height;
      image.pixels.assign(stored->bytes.begin(), stored->bytes.end());
      CropBox box = plan_crop(image.width, image.height, options_.transform, rng);
      crop_resize_normalize(image, box, 1.0, 1.0, options_.transform, out);
      return OkStatus();
    }
    Result<JpegHeader> h = decoder.header(stored->bytes);
    if (!h.ok()) return h.error();
    CropBox box = plan_crop(h->width, h->height, options_.transform, rng);
    // Decode only as large as the crop needs: its output resolution or more.
    const int min_w = static_cast<int>(std::ceil(size * h->width / std::max(1.0, box.width)));
    const int min_h = static_cast<int>(std::ceil(size * h->height / std::max(1.0, box.height)));
    if (Status s = decoder.decode(stored->bytes, min_w, min_h, image); !s.ok()) return s;
    crop_resize_normalize(image, box, static_cast<double>(image.width) / h->width,
                          static_cast<double>(image.height) / h->height, options_.transform, out);
    return OkStatus();
  }

  const Dataset& dataset_;
  RingMemory& ring_;
  const LoaderOptions& options_;
  int event_fd_;
  mutable std::mutex mutex_;
  std::vector<std::string> warnings_;
  std::condition_variable ready_;
  std::deque<ChunkJob> jobs_;
  std::vector<uint64_t> done_;
  size_t outstanding_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> samples_{0};
  std::atomic<uint64_t> errors_{0};
};

json hello_reply(const LoaderOptions& o, const RingGeometry& g, const Dataset& ds, int consumer,
                 uint64_t start) {
  const TransformOptions& t = o.transform;
  return json{{"ok", true},
              {"consumer", consumer},
              {"name", o.name},
              {"loader_pid", getpid()},
              {"shm", o.shm_name},
              {"shm_bytes", g.total_bytes},
              {"slots", g.slots},
              {"chunk", g.chunk_samples},
              {"slot_stride", g.slot_stride},
              {"first_slot_offset", kRingPage},
              {"labels_offset", g.labels_offset},
              {"ids_offset", g.ids_offset},
              {"images_offset", g.images_offset},
              {"channels", g.channels},
              {"size", g.image_size},
              {"dtype", "float32"},
              {"dataset_size", ds.size()},
              {"classes", ds.classes().size()},
              {"augment", t.augment},
              {"mean", t.mean},
              {"std", t.std},
              {"start", start}};
}

json consumer_json(const ConsumerRecord& c, int64_t now_ms) {
  return json{{"id", c.id},
              {"duration_ms", (c.left_ms >= 0 ? c.left_ms : now_ms) - c.joined_ms},
              {"pid", c.pid},
              {"job", c.name},
              {"batch_size", c.batch_size},
              {"joined_ms", c.joined_ms},
              {"left_ms", c.left_ms},
              {"start", c.start},
              {"samples", c.samples},
              {"batches", c.batches},
              {"epochs", c.epochs},
              {"wait_ms", c.wait_ms},
              {"pending_ms", c.pending_ms},
              {"held_back_ms", c.held_back_ms},
              {"detached", c.detached}};
}

int64_t cpu_ms_of_process() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (int64_t{u.ru_utime.tv_sec} + u.ru_stime.tv_sec) * 1000 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000;
}

int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return int64_t{u.ru_maxrss} * 1024;
}

// One connected consumer socket.
struct Client {
  int fd = -1;
  int pid = 0;       // from SO_PEERCRED
  int consumer = 0;  // broker id after hello; 0 before
};

class ControlLoop {
 public:
  ControlLoop(const LoaderOptions& options, const Dataset& dataset, RingMemory& ring,
              RingBroker& broker, DecodePool& pool, int listen_fd, int event_fd, int signal_fd,
              std::ostream& log)
      : options_(options),
        dataset_(dataset),
        ring_(ring),
        broker_(broker),
        pool_(pool),
        listen_fd_(listen_fd),
        event_fd_(event_fd),
        signal_fd_(signal_fd),
        log_(log),
        started_wall_ms_(::colo::wall_ms()),
        started_ms_(monotonic_ms()) {}

  Status run() {
    UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
    if (ep.get() < 0) return Error(fmt::format("epoll_create1: {}", std::strerror(errno)));
    epoll_ = ep.get();
    for (int fd : {listen_fd_, event_fd_, signal_fd_}) watch(fd);
    feed();
    while (!stopping_) {
      epoll_event events[32];
      int n = epoll_wait(epoll_, events, 32, 100);
      if (n < 0 && errno != EINTR)
        return Error(fmt::format("epoll_wait: {}", std::strerror(errno)));
      const int64_t now = monotonic_ms();
      for (int i = 0; i < n; ++i) handle(events[i].data.fd, events[i].events, now);
      if (options_.parent_pid > 0 && getppid() != options_.parent_pid) {
        log_ << "the colo that started this loader is gone; stopping\n";
        stopping_ = true;
      }
      broker_.tick(now);
      send_replies();
      feed();
    }
    for (auto& [fd, c] : clients_) ::close(fd);
    clients_.clear();
    return OkStatus();
  }

  json stats() const {
    json consumers = json::array();
    const int64_t now = monotonic_ms();
    for (const ConsumerRecord& c : broker_.consumers()) consumers.push_back(consumer_json(c, now));
    const BrokerStats s = broker_.stats();
    return json{{"name", options_.name},
                {"path", options_.path},
                {"format", to_string(dataset_.format())},
                {"dataset_size", dataset_.size()},
                {"loader_pid", getpid()},
                {"threads", options_.threads},
                {"ring_bytes", ring_.geometry().total_bytes},
                {"slots", ring_.geometry().slots},
                {"chunk", ring_.geometry().chunk_samples},
                {"image_size", ring_.geometry().image_size},
                {"started_ms", started_wall_ms_},
                {"wall_ms", now - started_ms_},
                {"cpu_ms", cpu_ms_of_process()},
                {"peak_rss_bytes", peak_rss_bytes()},
                {"samples_decoded", pool_.samples_decoded()},
                {"decode_errors", pool_.decode_errors()},
                {"chunks_published", s.chunks_published},
                {"epochs_ordered", s.epochs_ordered},
                {"starved_full_ms", s.starved_full_ms},
                {"starved_decoding_ms", s.starved_decoding_ms},
                {"consumers", consumers}};
  }

 private:
  void watch(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }

  void feed() {
    // Keep every thread busy, and a little more, without taking every slot at once.
    const size_t want = static_cast<size_t>(options_.threads) * 2;
    while (pool_.outstanding() < want) {
      std::optional<ChunkJob> job = broker_.next_job();
      if (!job) break;
      pool_.push(std::move(*job));
    }
  }

  void handle(int fd, uint32_t events, int64_t now) {
    if (fd == signal_fd_) {
      signalfd_siginfo info{};
      ssize_t r = ::read(signal_fd_, &info, sizeof info);
      (void)r;
      log_ << fmt::format("signal {}: stopping\n", info.ssi_signo);
      stopping_ = true;
      return;
    }
    if (fd == event_fd_) {
      uint64_t count = 0;
      ssize_t r = ::read(event_fd_, &count, sizeof count);
      (void)r;
      for (uint64_t chunk : pool_.take_done()) broker_.completed(chunk, now);
      for (const std::string& w : pool_.take_warnings()) log_ << w << '\n' << std::flush;
      return;
    }
    if (fd == listen_fd_) {
      accept_client();
      return;
    }
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      message(it->second, std::string_view(buf, static_cast<size_t>(n)), now);
      return;
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ||
        (events & (EPOLLHUP | EPOLLERR))) {
      drop(fd, now);
    }
  }

  void accept_client() {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
      send_json(
          fd, json{{"ok", false}, {"error", "this loader serves processes of its own user only"}});
      ::close(fd);
      return;
    }
    clients_[fd] = Client{fd, static_cast<int>(cred.pid), 0};
    watch(fd);
  }

  void drop(int fd, int64_t now) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    if (it->second.consumer != 0) {
      broker_.leave(it->second.consumer, now);
      by_consumer_.erase(it->second.consumer);
      log_ << fmt::format("consumer {} (pid {}) left\n", it->second.consumer, it->second.pid);
    }
    epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    clients_.erase(it);
  }

  void message(Client& client, std::string_view text, int64_t now) {
    json m = json::parse(text, nullptr, false);
    if (m.is_discarded() || !m.is_object() || !m.contains("op") || !m["op"].is_string()) {
      send_json(client.fd, json{{"ok", false},
                                {"error",
                                 "malformed request (one JSON object "
                                 "with an \"op\" per message)"}});
      return;
    }
    const std::string op = m["op"].get<std::string>();
    if (op == "stats") {
      send_json(client.fd, stats());
      return;
    }
    if (op == "hello") {
      if (client.consumer != 0) return;
      const auto batch = m.value("batch_size", int64_t{0});
      const std::string job = m.value("job", std::string());
      Result<int> id = batch > 0 && batch <= UINT32_MAX
                           ? broker_.join(static_cast<uint32_t>(batch), client.pid, job, now)
                           : Result<int>(Error("batch_size must be a positive integer"));
      if (!id.ok()) {
        send_json(client.fd, json{{"ok", false}, {"error", id.error().message()}});
        return;
      }
      client.consumer = *id;
      by_consumer_[*id] = client.fd;
      send_json(client.fd,
                hello_reply(options_, ring_.geometry(), dataset_, *id, broker_.start_of(*id)));
      log_ << fmt::format("consumer {} (pid {}{}) joined: batch size {}, at stream position {}\n",
                          *id, client.pid, job.empty() ? "" : ", job " + job, batch,
                          broker_.start_of(*id));
      return;
    }
    if (client.consumer == 0) {
      send_json(client.fd, json{{"ok", false}, {"error", "say hello first"}});
      return;
    }
    if (m.contains("wait_ms") && m["wait_ms"].is_number())
      broker_.report_wait(client.consumer, static_cast<int64_t>(m["wait_ms"].get<double>()));
    const int release = static_cast<int>(m.value("release", int64_t{0}));
    if (release > 0) broker_.release(client.consumer, release);
    if (op == "next") {
      broker_.request(client.consumer, now);
    } else if (op == "skip") {
      broker_.skip_epoch(client.consumer);
    } else if (op != "release") {
      send_json(client.fd, json{{"ok", false}, {"error", "unknown op '" + op + "'"}});
    }
    send_replies();
  }

  void send_replies() {
    for (BrokerReply& r : broker_.take_replies()) {
      auto it = by_consumer_.find(r.consumer);
      if (it == by_consumer_.end()) continue;
      if (!r.batch) {
        log_ << fmt::format("consumer {}: {}\n", r.consumer, r.error);
        send_json(it->second, json{{"ok", false}, {"detached", true}, {"error", r.error}});
        continue;
      }
      json pieces = json::array();
      for (const Piece& p : r.batch->pieces) pieces.push_back({p.slot, p.first, p.count});
      send_json(it->second, json{{"ok", true},
                                 {"epoch", r.batch->epoch},
                                 {"index", r.batch->index},
                                 {"position", r.batch->position},
                                 {"count", r.batch->count},
                                 {"last", r.batch->last},
                                 {"pieces", pieces}});
    }
  }

  static void send_json(int fd, const json& j) {
    const std::string text = j.dump();
    // A consumer that does not read its socket only loses its own replies.
    ssize_t n = ::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)n;
  }

  const LoaderOptions& options_;
  const Dataset& dataset_;
  RingMemory& ring_;
  RingBroker& broker_;
  DecodePool& pool_;
  int listen_fd_;
  int event_fd_;
  int signal_fd_;
  std::ostream& log_;
  int64_t started_wall_ms_;
  int64_t started_ms_;
  int epoll_ = -1;
  bool stopping_ = false;
  std::map<int, Client> clients_;   // by fd
  std::map<int, int> by_consumer_;  // broker id -> fd
};

std::string safe_name(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out.substr(0, 48);
}

}  // namespace

LoaderOptions with_default_names(LoaderOptions options, int pid) {
  const std::string base = fmt::format("colo-data-{}-{}", pid, safe_name(options.name));
  if (options.shm_name.empty()) options.shm_name = "/" + base;
  if (options.socket_name.empty()) options.socket_name = base;
  return options;
}

Status run_loader(LoaderOptions options, std::ostream& log) {
  options = with_default_names(std::move(options), getpid());
  if (options.parent_pid > 0) {
    // Stop (and clean up) when the colo that started us dies.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != options.parent_pid) return Error("the colo that started this loader is gone");
  }
  if (!options.cpus.empty()) {
    Result<std::vector<int>> cpus = parse_cpu_list(options.cpus);
    if (!cpus.ok()) return cpus.error();
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : *cpus) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
      return Error(fmt::format("cannot run on CPUs {}: {}", options.cpus, std::strerror(errno)));
  }
  if (options.threads < 1) return Error("threads must be at least 1");
  if (options.transform.size < 1) return Error("the image size must be at least 1");

  Result<std::unique_ptr<Dataset>> dataset = open_dataset(options.path, options.format);
  if (!dataset.ok()) return dataset.error();

  // Signals become events of the control loop (blocked before threads start).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  UniqueFd signal_fd(signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
  UniqueFd event_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  UniqueFd listen_fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (signal_fd.get() < 0 || event_fd.get() < 0)
    return Error(fmt::format("cannot set up the loader's descriptors: {}", std::strerror(errno)));

  const auto size = static_cast<uint32_t>(options.transform.size);
  uint32_t slots = slots_for_bytes(options.ring_bytes, options.chunk_samples, size);
  const RingGeometry geometry = ring_geometry(slots, options.chunk_samples, size);
  const std::string owner_path =
      options.state_dir.empty() ? "" : ring_owner_path(options.state_dir, options.shm_name);
  if (!owner_path.empty()) {
    RingOwnerRecord record{options.shm_name,
                           options.socket_name,
                           getpid(),
                           options.parent_pid > 0 ? options.parent_pid : getpid(),
                           "",
                           ::colo::wall_ms()};
    if (Status s = write_ring_owner(owner_path, record); !s.ok()) return s;
  }
  Status outcome = OkStatus();
  json final_stats;
  {
    Result<std::unique_ptr<RingMemory>> ring =
        RingMemory::create(options.shm_name, geometry, (*dataset)->size());
    if (!ring.ok()) {
      if (!owner_path.empty()) std::remove(owner_path.c_str());
      return ring.error();
    }
    // Listening last: once consumers can connect, everything is ready.
    socklen_t addr_len = 0;
    sockaddr_un addr = abstract_address(options.socket_name, addr_len);
    if (listen_fd.get() < 0 ||
        bind(listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), addr_len) != 0 ||
        listen(listen_fd.get(), 64) != 0) {
      const int err = errno;
      ring->reset();
      if (!owner_path.empty()) std::remove(owner_path.c_str());
      return Error(fmt::format("cannot listen on socket @{}: {}{}", options.socket_name,
                               std::strerror(err),
                               err == EADDRINUSE ? " (another loader uses this name)" : ""));
    }
    BrokerOptions bo;
    bo.dataset_size = (*dataset)->size();
    bo.chunk_samples = options.chunk_samples;
    bo.slots = geometry.slots;
    bo.max_consumers = options.max_consumers;
    bo.lag_timeout_ms = options.lag_timeout_ms;
    bo.seed = options.seed;
    RingBroker broker(bo);
    DecodePool pool(**dataset, **ring, options, event_fd.get());
    pool.start(options.threads);
    log << fmt::format(
               "loader '{}': {} ({}, {} samples, {} classes), {}x{} crops{}, {} threads, ring {} "
               "({} slots of {}), socket @{}, shared memory {}\n",
               options.name, options.path, to_string((*dataset)->format()), (*dataset)->size(),
               (*dataset)->classes().size(), size, size,
               options.transform.augment ? " (random-resized-crop, flip)" : "", options.threads,
               format_bytes(geometry.total_bytes), geometry.slots, options.chunk_samples,
               options.socket_name, options.shm_name)
        << std::flush;
    ControlLoop loop(options, **dataset, **ring, broker, pool, listen_fd.get(), event_fd.get(),
                     signal_fd.get(), log);
    outcome = loop.run();
    pool.stop();
    final_stats = loop.stats();
  }  // the ring is unlinked here
  if (!owner_path.empty()) std::remove(owner_path.c_str());
  if (!options.stats_path.empty()) {
    if (Status s = replace_file(options.stats_path, final_stats.dump(2) + '\n'); !s.ok())
      log << fmt::format("loader '{}': {}\n", options.name, s.error().message());
  }
  log << fmt::format("loader '{}' stopped: {} samples decoded, {} CPU\n", options.name,
                     final_stats.value("samples_decoded", uint64_t{0}),
                     format_duration_ms(final_stats.value("cpu_ms", int64_t{0})))
      << std::flush;
  return outcome;
}

}  // namespace colo
