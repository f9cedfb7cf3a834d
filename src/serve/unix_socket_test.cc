#include "serve/unix_socket.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>

namespace colo {
namespace {

using ::testing::HasSubstr;

class SocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "sock.XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_;
};

TEST_F(SocketTest, AnswersEachRequestWithTheCallersIdentity) {
  ListenOptions options;
  options.path = dir_ + "/colo.sock";
  auto server = SocketServer::listen(options);
  ASSERT_TRUE(server.ok()) << server.error().message();
  struct stat st {};
  ASSERT_EQ(::stat(options.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);

  std::atomic<bool> done{false};
  Caller seen;
  std::thread loop([&] {
    while (!done) {
      (*server)->poll_once(20, [&](const Caller& caller, const std::string& request) {
        seen = caller;
        return "echo:" + request;
      });
    }
  });
  Result<std::string> answer = call_socket(options.path, R"({"op":"queue"})", 2000);
  Result<std::string> big = call_socket(options.path, std::string(300'000, 'x'), 2000);
  done = true;
  loop.join();
  ASSERT_TRUE(answer.ok()) << answer.error().message();
  EXPECT_EQ(*answer, R"(echo:{"op":"queue"})");
  ASSERT_TRUE(big.ok()) << big.error().message();
  EXPECT_EQ(big->size(), 300'005u);
  EXPECT_EQ(seen.uid, geteuid());
  EXPECT_EQ(seen.pid, getpid());
  EXPECT_EQ(seen.user, user_name_of(geteuid()));
}

TEST_F(SocketTest, OneServicePerSocketAndAStaleSocketFileIsReplaced) {
  ListenOptions options;
  options.path = dir_ + "/colo.sock";
  {
    auto first = SocketServer::listen(options);
    ASSERT_TRUE(first.ok()) << first.error().message();
    auto second = SocketServer::listen(options);
    ASSERT_FALSE(second.ok());
    EXPECT_THAT(second.error().message(),
                HasSubstr("another colo serve (pid " + std::to_string(getpid()) + ") listens on"));
  }
  EXPECT_NE(::access(options.path.c_str(), F_OK), 0) << "removed with its server";
  Result<std::string> nobody = call_socket(options.path, "{}", 500);
  ASSERT_FALSE(nobody.ok());
  EXPECT_THAT(nobody.error().message(), HasSubstr("no colo serve listens on"));
  // A file left behind (a killed service) does not stop the next one.
  ASSERT_EQ(std::system(("touch '" + options.path + "'").c_str()), 0);
  EXPECT_TRUE(SocketServer::listen(options).ok());
}

TEST_F(SocketTest, TooLongAPathIsAClearError) {
  ListenOptions options;
  options.path = dir_ + "/" + std::string(120, 's');
  auto server = SocketServer::listen(options);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.error().message(), HasSubstr("too long"));
}

TEST(Groups, RootIsInItsGroupAndUnknownGroupsAreErrors) {
  EXPECT_TRUE(user_in_group(0, 0));
  Result<gid_t> none = group_id("colo-no-such-group");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.error().message(), HasSubstr("no group 'colo-no-such-group'"));
  EXPECT_EQ(user_name_of(0), "root");
}

}  // namespace
}  // namespace colo
