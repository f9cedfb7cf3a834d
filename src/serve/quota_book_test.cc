#include "serve/quota_book.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace colo {
namespace {

using ::testing::HasSubstr;

// Users 1 (a), 2 (b) and 0 (root); group 100 (g) holds a and b.
QuotaDirectory quota_directory() {
  return QuotaDirectory{
      [](uid_t uid, gid_t gid) { return gid == 100 && (uid == 1 || uid == 2); },
      [](uid_t uid) { return uid == 0 ? std::string("root") : fmt::format("u{}", uid); }};
}

JobSpec quota_spec(const std::string& name, int gpus = 1) {
  JobSpec s;
  s.name = name;
  s.gpus = gpus;
  return s;
}

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// What colo_serve_test's quota tests see through the service, table-driven:
// each owner's room, whether it holds them, and the queue's "quota:" reason.
TEST(QuotaBook, EachOwnersRoomIsTheLeastOfTheirOwnBoundAndTheirGroupsRoom) {
  struct Owner {
    uid_t uid;
    size_t unfinished;
    OwnerLoad load;
    double left;  // kUnbounded: unbounded
    bool holds;
    std::string why;  // a part of the reason; empty: none
  };
  struct Case {
    std::string what;
    QuotaBounds bounds;
    std::vector<Owner> owners;
  };
  QuotaBounds per_user;
  per_user.max_gpus_per_user = 1;
  QuotaBounds own_replaces = per_user;
  own_replaces.users[1] = QuotaBound{"a", 3, {}};
  QuotaBounds group;
  group.groups[100] = QuotaBound{"g", 1, 3};
  QuotaBounds group_of_two;
  group_of_two.groups[100] = QuotaBound{"g", 2, {}};
  const std::vector<Case> cases = {
      {"--max-gpus-per-user 1: one job runs, the rest wait",
       per_user,
       {{0,
         3,
         {1, 1.0, 0, "root"},
         0,
         true,
         "root runs 1.0 GPUs' worth, at most 1 per user (colo serve --max-gpus-per-user)"}}},
      {"--max-gpus-per-user 1: half a GPU held leaves half",
       per_user,
       {{0, 2, {1, 0.5, 0, "root"}, 0.5, true, "root runs 0.5 GPUs' worth"}}},
      {"nothing running: a whole GPU's room",
       per_user,
       {{0, 2, {0, 0, 0, "root"}, 1, false, "root runs 0.0 GPUs' worth"}}},
      {"a user's own bound replaces the default",
       own_replaces,
       {{1,
         4,
         {1, 1, 0, "a"},
         2,
         false,
         "a runs 1.0 GPUs' worth, at most 3 for them (colo serve --max-gpus-for a=3)"},
        {2, 2, {1, 1, 0, "b"}, 0, true, "at most 1 per user"}}},
      {"@g=1: a member holds it all, the others wait; root is outside",
       group,
       {{1,
         2,
         {1, 1, 0, "a"},
         0,
         true,
         "group g runs 1.0 GPUs' worth, at most 1 (colo serve --max-gpus-for @g=1)"},
        {2, 1, {0, 0, 0, "b"}, 0, true, "group g runs 1.0 GPUs' worth, at most 1"},
        {0, 1, {0, 0, 0, "root"}, kUnbounded, false, ""}}},
      {"@g=2, none held: the room goes first to who used less",
       group_of_two,
       {{1,
         2,
         {0, 0, 10, "a"},
         0,
         true,
         "group g runs 0.0 of its 2 GPUs' worth (colo serve --max-gpus-for @g=2); the rest goes "
         "first to its members who used less lately"},
        {2, 2, {0, 0, 1, "b"}, 2, false, "group g runs 0.0 of its 2 GPUs' worth"}}},
      {"@g=2, one held by the heavier user: the lighter takes the other",
       group_of_two,
       {{1, 3, {1, 1, 10, "a"}, 0, true, "group g runs 1.0 of its 2 GPUs' worth"},
        {2, 1, {0, 0, 1, "b"}, 1, false, "group g runs 1.0 of its 2 GPUs' worth"}}},
      {"a name the load does not give comes from the directory",
       per_user,
       {{7, 2, {1, 1, 0, ""}, 0, true, "u7 runs 1.0 GPUs' worth"}}},
  };
  for (const Case& c : cases) {
    QuotaBook book(c.bounds, quota_directory());
    EXPECT_TRUE(book.bound_gpus()) << c.what;
    std::map<uid_t, OwnerLoad> load;
    for (const Owner& o : c.owners) {
      for (size_t i = 0; i < o.unfinished; ++i) book.job_added(o.uid);
      load[o.uid] = o.load;
    }
    book.update(load);
    for (const Owner& o : c.owners) {
      ASSERT_TRUE(book.knows(o.uid)) << c.what << ": " << o.uid;
      if (std::isinf(o.left)) {
        EXPECT_TRUE(std::isinf(book.left().at(o.uid))) << c.what << ": " << o.uid;
      } else {
        EXPECT_NEAR(book.left().at(o.uid), o.left, 1e-9) << c.what << ": " << o.uid;
      }
      EXPECT_EQ(book.holds(o.uid), o.holds) << c.what << ": " << o.uid;
      const std::string* why = book.why(o.uid);
      if (o.why.empty()) {
        EXPECT_EQ(why, nullptr) << c.what << ": " << o.uid;
      } else {
        ASSERT_NE(why, nullptr) << c.what << ": " << o.uid;
        EXPECT_THAT(*why, HasSubstr(o.why)) << c.what << ": " << o.uid;
      }
    }
  }
}

TEST(QuotaBook, AnOwnerWithNoJobLeftIsNoLongerBounded) {
  QuotaBounds bounds;
  bounds.max_gpus_per_user = 1;
  QuotaBook book(bounds, quota_directory());
  book.job_added(1);
  book.job_added(1);
  book.update({{1, OwnerLoad{1, 1, 0, "a"}}});
  EXPECT_TRUE(book.holds(1));
  book.job_ended(1);
  EXPECT_EQ(book.unfinished().at(1), 1u);
  book.job_ended(1);
  EXPECT_FALSE(book.unfinished().contains(1));
  book.job_ended(1);  // one too many: nothing to forget
  book.update({});
  EXPECT_FALSE(book.knows(1));
  EXPECT_FALSE(book.holds(1));
  EXPECT_TRUE(book.left().empty());
}

TEST(QuotaBook, OnlyABoundOnGpusMakesTheEngineHoldJobsBack) {
  QuotaBounds none;
  EXPECT_FALSE(none.bound_gpus());
  QuotaBounds jobs_only;
  jobs_only.users[1] = QuotaBound{"a", {}, 3};
  jobs_only.groups[100] = QuotaBound{"g", {}, 3};
  EXPECT_FALSE(jobs_only.bound_gpus());
  QuotaBounds user = jobs_only;
  user.users[2] = QuotaBound{"b", 2, {}};
  EXPECT_TRUE(user.bound_gpus());
  QuotaBounds group = jobs_only;
  group.groups[101] = QuotaBound{"h", 2, {}};
  EXPECT_TRUE(group.bound_gpus());
}

// What colo_serve_test's --max-jobs-for cases see, and a gang that could never start.
TEST(QuotaBook, ASubmissionPastABoundOnJobsOrAGangPastTheGpusIsRefusedSayingWhich) {
  struct Case {
    std::string what;
    QuotaBounds bounds;
    std::map<uid_t, size_t> unfinished;
    uid_t owner;
    std::vector<JobSpec> specs;
    std::string refusal;  // empty: taken
  };
  QuotaBounds root_two;
  root_two.users[0] = QuotaBound{"root", {}, 2};
  QuotaBounds per_user;
  per_user.max_jobs_per_user = 2;
  QuotaBounds group;
  group.groups[100] = QuotaBound{"g", 1, 3};
  group.users[0] = QuotaBound{"root", {}, 2};
  QuotaBounds gpus;
  gpus.max_gpus_per_user = 1.5;
  QuotaBounds own_gpus = gpus;
  own_gpus.users[1] = QuotaBound{"a", 4, {}};
  const std::vector<Case> cases = {
      {"root's own bound",
       root_two,
       {},
       0,
       {quota_spec("r"), quota_spec("r"), quota_spec("r")},
       "submit: you have 0 jobs queued or running, and this colo serve takes at most 2 of yours "
       "(its --max-jobs-for root=2); the 3 jobs of this submission would pass that: wait for "
       "some to end, or cancel some (colo cancel)"},
      {"root's own bound, room left", root_two, {{0, 1}}, 0, {quota_spec("r")}, ""},
      {"the default per user",
       per_user,
       {{1, 1}},
       1,
       {quota_spec("x"), quota_spec("x")},
       "submit: you have 1 job queued or running, and this colo serve takes at most 2 per user "
       "(its --max-jobs-per-user)"},
      {"the group's members together",
       group,
       {{1, 2}},
       2,
       {quota_spec("g"), quota_spec("g")},
       "submit: group g's members have 2 jobs queued or running, and this colo serve takes at "
       "most 3 of theirs together (its --max-jobs-for @g=3)"},
      {"the group's last room", group, {{1, 2}}, 2, {quota_spec("g")}, ""},
      {"root outside the group: its own bound, not the group's",
       group,
       {{1, 2}},
       0,
       {quota_spec("r"), quota_spec("r")},
       ""},
      {"a gang wider than --max-gpus-per-user",
       gpus,
       {},
       1,
       {quota_spec("one"), quota_spec("wide", 2)},
       "submit: job 'wide' needs 2 GPUs at once, but this colo serve lets u1 hold at most 1.5 "
       "GPUs' worth (its --max-gpus-per-user 1.5), so it could never start; give it at most 1 "
       "GPUs"},
      {"a user's own bound on GPUs lets the gang in", own_gpus, {}, 1, {quota_spec("wide", 2)}, ""},
      {"a group's bound on GPUs is the least",
       group,
       {},
       1,
       {quota_spec("wide", 2)},
       "its --max-gpus-for @g=1"},
      {"a gang with no bound on GPUs", root_two, {}, 0, {quota_spec("wide", 8)}, ""},
  };
  for (const Case& c : cases) {
    QuotaBook book(c.bounds, quota_directory());
    for (const auto& [uid, n] : c.unfinished) {
      for (size_t i = 0; i < n; ++i) book.job_added(uid);
    }
    std::optional<std::string> over = book.over_quota(c.owner, c.specs);
    if (c.refusal.empty()) {
      EXPECT_EQ(over, std::nullopt) << c.what << ": " << over.value_or("");
    } else {
      ASSERT_TRUE(over.has_value()) << c.what;
      EXPECT_THAT(*over, HasSubstr(c.refusal)) << c.what;
    }
  }
}

// Users 1 (a) and 2 (b) in primary group g, 0 (root) in root, 7 in none known.
QuotaDirectory protected_directory() {
  QuotaDirectory d = quota_directory();
  d.primary_group_of = [](uid_t uid) {
    return uid == 0 ? std::string("root") : uid == 7 ? std::string() : std::string("g");
  };
  return d;
}

JobSpec protected_spec(const std::string& name, int gpus = 1) {
  JobSpec s = quota_spec(name, gpus);
  s.qos = QosClass::kProtected;
  return s;
}

// Issue 56 (5): the GPUs protected jobs hold, bounded per user and per
// primary group; what colo_serve_test's protected-quota test sees.
TEST(QuotaBook, AnOwnersProtectedGpusAreBoundedPerUserAndPerPrimaryGroup) {
  struct Owner {
    uid_t uid;
    OwnerLoad load;  // running, gpus_held, share, name, protected_gpus, protected_queued
    double left;     // protected GPUs left; kUnbounded: unbounded
    bool holds;
    std::string why;  // a part of the reason; empty: none
  };
  struct Case {
    std::string what;
    QuotaBounds bounds;
    std::vector<Owner> owners;
  };
  QuotaBounds user_one;
  user_one.max_protected_gpus_per_user = 1;
  QuotaBounds user_two;
  user_two.max_protected_gpus_per_user = 2;
  QuotaBounds group_one;
  group_one.max_protected_gpus_per_group = 1;
  QuotaBounds group_two;
  group_two.max_protected_gpus_per_group = 2;
  QuotaBounds both = user_one;
  both.max_protected_gpus_per_group = 3;
  const std::vector<Case> cases = {
      {"per user 1: a holds one, b none",
       user_one,
       {{1,
         {1, 1, 0, "a", 1, 1},
         0,
         true,
         "a already holds 1 protected GPU, at most 1 per user (colo serve "
         "--max-protected-gpus-per-user 1)"},
        {2, {1, 1, 0, "b", 0, 1}, 1, false, "b already holds 0 protected GPUs"}}},
      {"per user 2: a holds one, room for another",
       user_two,
       {{1, {1, 1, 0, "a", 1, 1}, 1, false, "at most 2 per user"}}},
      {"a gang of two past per user 2",
       user_two,
       {{1, {1, 2, 0, "a", 2, 0}, 0, true, "a already holds 2 protected GPUs"}}},
      {"per group 1: a holds it, b waits too; root is in another group",
       group_one,
       {{1,
         {1, 1, 0, "a", 1, 0},
         0,
         true,
         "group g already holds 1 protected GPU, at most 1 per group (colo serve "
         "--max-protected-gpus-per-group 1)"},
        {2, {0, 0, 0, "b", 0, 1}, 0, true, "group g already holds 1 protected GPU"},
        {0, {0, 0, 0, "root", 0, 1}, 1, false, "group root holds 0 of its 1 protected GPU"}}},
      {"per group 2, none held: the room goes first to who used less",
       group_two,
       {{1,
         {0, 0, 10, "a", 0, 1},
         0,
         true,
         "group g holds 0 of its 2 protected GPUs (colo serve --max-protected-gpus-per-group 2); "
         "the rest goes first to its members who used less lately"},
        {2, {0, 0, 1, "b", 0, 2}, 2, false, "group g holds 0 of its 2 protected GPUs"}}},
      {"per user 1 within per group 3: the user's is the least",
       both,
       {{1, {1, 1, 0, "a", 1, 1}, 0, true, "at most 1 per user"},
        {2, {0, 0, 0, "b", 0, 1}, 1, false, "at most 1 per user"}}},
      {"a user whose primary group is unknown: no group's bound",
       group_one,
       {{7, {1, 1, 0, "u7", 1, 1}, kUnbounded, false, ""}}},
  };
  for (const Case& c : cases) {
    QuotaBook book(c.bounds, protected_directory());
    EXPECT_TRUE(book.bound_gpus()) << c.what << ": the engine holds protected jobs back";
    EXPECT_TRUE(book.bound_protected()) << c.what;
    std::map<uid_t, OwnerLoad> load;
    for (const Owner& o : c.owners) {
      book.job_added(o.uid);
      load[o.uid] = o.load;
    }
    book.update(load);
    for (const Owner& o : c.owners) {
      ASSERT_TRUE(book.protected_left().contains(o.uid)) << c.what << ": " << o.uid;
      EXPECT_TRUE(std::isinf(book.left().at(o.uid))) << c.what << ": no bound on GPUs' worth";
      EXPECT_FALSE(book.holds(o.uid)) << c.what << ": " << o.uid;
      if (std::isinf(o.left)) {
        EXPECT_TRUE(std::isinf(book.protected_left().at(o.uid))) << c.what << ": " << o.uid;
      } else {
        EXPECT_NEAR(book.protected_left().at(o.uid), o.left, 1e-9) << c.what << ": " << o.uid;
      }
      EXPECT_EQ(book.holds_protected(o.uid), o.holds) << c.what << ": " << o.uid;
      const std::string* why = book.why_protected(o.uid);
      if (o.why.empty()) {
        EXPECT_EQ(why, nullptr) << c.what << ": " << o.uid;
      } else {
        ASSERT_NE(why, nullptr) << c.what << ": " << o.uid;
        EXPECT_THAT(*why, HasSubstr(o.why)) << c.what << ": " << o.uid;
      }
    }
  }
  // Without a bound on protected GPUs, none is worked out.
  QuotaBounds gpus_only;
  gpus_only.max_gpus_per_user = 1;
  QuotaBook book(gpus_only, protected_directory());
  book.job_added(1);
  book.update({{1, OwnerLoad{1, 1, 0, "a", 1, 1}}});
  EXPECT_TRUE(book.protected_left().empty());
  EXPECT_FALSE(book.holds_protected(1));
}

// A protected gang wider than the bound on protected GPUs could never
// start: refused at submission, naming the flag.
TEST(QuotaBook, AProtectedGangPastTheBoundOnProtectedGpusIsRefused) {
  struct Case {
    std::string what;
    QuotaBounds bounds;
    uid_t owner;
    std::vector<JobSpec> specs;
    std::string refusal;  // empty: taken
  };
  QuotaBounds user_one;
  user_one.max_protected_gpus_per_user = 1;
  QuotaBounds group_two;
  group_two.max_protected_gpus_per_group = 2;
  QuotaBounds both = group_two;
  both.max_protected_gpus_per_user = 4;
  const std::vector<Case> cases = {
      {"a protected gang of 2 past per user 1",
       user_one,
       1,
       {protected_spec("one"), protected_spec("wide", 2)},
       "submit: job 'wide' is protected and needs 2 GPUs at once, but this colo serve lets u1 "
       "hold at most 1 protected GPU (its --max-protected-gpus-per-user 1), so it could never "
       "start; give it at most 1 GPU, or make it normal"},
      {"one protected GPU fits per user 1", user_one, 1, {protected_spec("one")}, ""},
      {"a normal gang is not bounded by it", user_one, 1, {quota_spec("wide", 4)}, ""},
      {"the group's bound, the least",
       both,
       1,
       {protected_spec("wide", 3)},
       "(its --max-protected-gpus-per-group 2)"},
      {"a user of no known group: the group's bound does not hold",
       group_two,
       7,
       {protected_spec("wide", 3)},
       ""},
  };
  for (const Case& c : cases) {
    QuotaBook book(c.bounds, protected_directory());
    std::optional<std::string> over = book.over_quota(c.owner, c.specs);
    if (c.refusal.empty()) {
      EXPECT_EQ(over, std::nullopt) << c.what << ": " << over.value_or("");
    } else {
      ASSERT_TRUE(over.has_value()) << c.what;
      EXPECT_THAT(*over, HasSubstr(c.refusal)) << c.what;
    }
  }
}

}  // namespace
}  // namespace colo
