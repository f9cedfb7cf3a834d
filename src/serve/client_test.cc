#include "serve/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace colo {
namespace {

using ::testing::HasSubstr;

// A stand-in service: closes its first `drop` connections without a word,
// with unread data so that the kernel resets them (as colo serve does to
// connections past its bounds), then answers each request with `answer`
// (ok by default).
class DroppingServer {
 public:
  DroppingServer(const std::string& path, int drop, std::string answer = R"({"ok":true,"jobs":[]})")
      : drop_(drop), answer_(std::move(answer) + "\n") {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ok_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
          ::listen(fd_, 64) == 0;
    thread_ = std::thread([this] { serve(); });
  }
  ~DroppingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  bool ok() const { return ok_; }
  int accepted() const { return accepted_; }

 private:
  void serve() {
    while (true) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++accepted_;
      char buf[4096];
      if (accepted_ <= drop_) {
        ::close(c);  // before reading: the client's request is reset
        continue;
      }
      std::string in;
      while (in.find('\n') == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
      }
      (void)!::send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  int fd_ = -1;
  int drop_;
  std::string answer_;
  bool ok_ = false;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// Issue 53 (10): a client whose connections the service drops at its
// connection bounds tries again within its timeout, and is answered (296 of
// 500 concurrent `colo queue` calls failed with "Connection reset by peer").
// Where clients look for the service, and where `colo serve` listens by
// default, from the environment (restored after).
TEST(ServiceSocket, ClientsLookAtColoSocketElseTheStateDirThenTheSystemService) {
  struct Case {
    std::string what;
    std::map<std::string, std::string> env;  // unset: the others named below
    std::vector<std::string> candidates;
    std::string listens;
  };
  const std::vector<Case> cases = {
      {"$COLO_SOCKET alone",
       {{"COLO_SOCKET", "/run/x.sock"}, {"COLO_HOME", "/h"}},
       {"/run/x.sock"},
       "/run/x.sock"},
      {"$COLO_HOME: its socket alone", {{"COLO_HOME", "/h"}}, {"/h/colo.sock"}, "/h/colo.sock"},
      {"$XDG_STATE_HOME, then the system service's",
       {{"XDG_STATE_HOME", "/x"}},
       {"/x/colo/colo.sock", "/var/lib/colo/colo.sock"},
       "/x/colo/colo.sock"},
      {"$HOME, then the system service's",
       {{"HOME", "/home/a"}},
       {"/home/a/.local/state/colo/colo.sock", "/var/lib/colo/colo.sock"},
       "/home/a/.local/state/colo/colo.sock"},
      {"the system service's own state dir: once",
       {{"XDG_STATE_HOME", "/var/lib"}},
       {"/var/lib/colo/colo.sock"},
       "/var/lib/colo/colo.sock"},
      {"an empty $COLO_SOCKET counts as unset",
       {{"COLO_SOCKET", ""}, {"COLO_HOME", "/h"}},
       {"/h/colo.sock"},
       "/h/colo.sock"},
  };
  const std::vector<std::string> names = {"COLO_SOCKET", "COLO_HOME", "XDG_STATE_HOME", "HOME"};
  std::map<std::string, std::optional<std::string>> saved;
  for (const std::string& n : names) {
    const char* v = std::getenv(n.c_str());
    saved[n] = v == nullptr ? std::nullopt : std::optional<std::string>(v);
  }
  for (const Case& c : cases) {
    for (const std::string& n : names) {
      auto it = c.env.find(n);
      if (it == c.env.end()) {
        ::unsetenv(n.c_str());
      } else {
        ::setenv(n.c_str(), it->second.c_str(), 1);
      }
    }
    EXPECT_EQ(service_socket_candidates(), c.candidates) << c.what;
    EXPECT_EQ(default_service_socket(), c.listens) << c.what;
  }
  for (const auto& [n, v] : saved) {
    if (v) {
      ::setenv(n.c_str(), v->c_str(), 1);
    } else {
      ::unsetenv(n.c_str());
    }
  }
}

TEST(ServiceClient, AConnectionTheServiceDropsIsTriedAgainWithinTheTimeout) {
  std::string templ = ::testing::TempDir() + "client.XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  const std::string path = templ + "/colo.sock";
  {
    DroppingServer server(path, 5);
    ASSERT_TRUE(server.ok());
    ServiceClient client(path, 30'000);
    Result<nlohmann::json> answer = client.call({{"op", "queue"}});
    ASSERT_TRUE(answer.ok()) << answer.error().message();
    EXPECT_EQ(server.accepted(), 6);
  }
  std::system(("rm -rf '" + templ + "'").c_str());
}

// Within the timeout only: a service that drops every connection is an error.
TEST(ServiceClient, AServiceThatDropsEveryConnectionIsAnErrorAfterTheTimeout) {
  std::string templ = ::testing::TempDir() + "client.XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  const std::string path = templ + "/colo.sock";
  {
    DroppingServer server(path, 1'000'000);
    ASSERT_TRUE(server.ok());
    ServiceClient client(path, 300);
    Result<nlohmann::json> answer = client.call({{"op", "queue"}});
    ASSERT_FALSE(answer.ok());
  }
  std::system(("rm -rf '" + templ + "'").c_str());
}

// Issue 58, item 15: an answer that refuses the caller permission is an
// error of its own kind (colo exits 5 for it, not 3); other refusals are not.
TEST(ServiceClient, ARefusalOfPermissionIsAnErrorOfItsOwnKind) {
  struct Case {
    std::string answer;
    bool denied;
  };
  const std::vector<Case> cases = {
      {R"({"ok":false,"error":"job 3 belongs to root","permission_denied":true})", true},
      {R"({"ok":false,"error":"there is no job 3"})", false},
      {R"({"ok":false,"error":"no","permission_denied":false})", false},
  };
  std::string templ = ::testing::TempDir() + "client.XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = templ + "/colo" + std::to_string(i) + ".sock";
    DroppingServer server(path, 0, cases[i].answer);
    ASSERT_TRUE(server.ok());
    Result<nlohmann::json> answer = ServiceClient(path, 5'000).call({{"op", "logs"}});
    ASSERT_FALSE(answer.ok()) << cases[i].answer;
    EXPECT_EQ(answer.error().permission_denied(), cases[i].denied) << cases[i].answer;
    EXPECT_FALSE(answer.error().transient()) << cases[i].answer;
  }
  std::system(("rm -rf '" + templ + "'").c_str());
}

// `colo wait` answers only once the store holds a job's end (and so all it
// reported): a job the service says is still being recorded is waited for;
// while the store cannot be written, the wait says so once and gives up
// after its bound, naming the job; a job recorded ended ends the wait.
TEST(FollowJobs, EndedJobsAreWaitedForUntilTheStoreRecordsThemWithinABound) {
  struct Case {
    std::string what;
    std::string answer;
    bool ok;             // follow_jobs returns the outcome (else an error)
    std::string notice;  // in the notices ("" : none)
    std::string error;   // in the error
    int64_t waited_ms;   // the fake clock's time spent waiting
  };
  const std::string running = R"({"id":4,"name":"e","state":"running","attempts":1})";
  const std::vector<Case> cases = {
      {"recorded ended", R"({"ok":true,"jobs":[{"id":4,"name":"e","state":"ok"}]})", true, "", "",
       0},
      {"being recorded, the store locked",
       R"({"ok":true,"jobs":[)" + running +
           R"(],"recording":[4],"store_trouble":"cannot write the store for 3.0s now: /s/colo.db: database is locked"})",
       false,
       "colo: job 4 ended; waiting for the store to record it: cannot write the store for 3.0s",
       "job 4 ended, but the store has not recorded its end after 10.0s: cannot write the store",
       10'000},
  };
  std::string templ = ::testing::TempDir() + "client.XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::string path = templ + "/colo" + std::to_string(i) + ".sock";
    DroppingServer server(path, 0, c.answer);
    ASSERT_TRUE(server.ok());
    FakeClock clock;
    const int64_t start = clock.monotonic_ms();
    FollowOptions options;
    options.print_progress = false;
    options.store_wait_ms = 10'000;
    std::ostringstream out;
    std::ostringstream notices;
    options.notices = &notices;
    Result<FollowOutcome> outcome =
        follow_jobs(ServiceClient(path, 5'000), {4}, options, clock, out);
    EXPECT_EQ(outcome.ok(), c.ok) << c.what;
    if (!c.error.empty()) {
      ASSERT_FALSE(outcome.ok()) << c.what;
      EXPECT_THAT(outcome.error().message(), HasSubstr(c.error)) << c.what;
    }
    if (c.notice.empty()) {
      EXPECT_EQ(notices.str(), "") << c.what;
    } else {
      EXPECT_THAT(notices.str(), HasSubstr(c.notice)) << c.what;
      // Said once, however many polls it waited.
      EXPECT_EQ(notices.str().find(c.notice), notices.str().rfind(c.notice)) << c.what;
    }
    EXPECT_EQ(out.str(), "") << c.what;
    EXPECT_EQ(clock.monotonic_ms() - start, c.waited_ms) << c.what;
  }
  std::system(("rm -rf '" + templ + "'").c_str());
}

// A job being recorded while the store is fine is simply waited for (the
// writer writes it within a tick): no notice, no bound.
TEST(FollowJobs, AJobBeingRecordedWithoutTroubleIsWaitedForSilently) {
  std::string templ = ::testing::TempDir() + "client.XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  const std::string path = templ + "/colo.sock";
  {
    DroppingServer server(
        path, 0, R"({"ok":true,"jobs":[{"id":4,"name":"e","state":"running"}],"recording":[4]})");
    ASSERT_TRUE(server.ok());
    FakeClock clock;
    FollowOptions options;
    options.print_progress = false;
    options.store_wait_ms = 1'000;
    std::atomic<int> detach{0};
    options.detach_requests = &detach;
    std::ostringstream out;
    std::ostringstream notices;
    options.notices = &notices;
    // Detaches once it has waited well past the bound.
    std::thread detacher([&] {
      while (clock.monotonic_ms() < FakeClock().monotonic_ms() + 5'000) std::this_thread::yield();
      detach = 1;
    });
    Result<FollowOutcome> outcome =
        follow_jobs(ServiceClient(path, 5'000), {4}, options, clock, out);
    detacher.join();
    ASSERT_TRUE(outcome.ok()) << outcome.error().message();
    EXPECT_TRUE(outcome->detached);
    EXPECT_EQ(notices.str(), "");
  }
  std::system(("rm -rf '" + templ + "'").c_str());
}

}  // namespace
}  // namespace colo
