#include "serve/admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace colo {
namespace {

using ::testing::HasSubstr;

TEST(Admission, BelowTheBoundsEveryoneIsLetIn) {
  EXPECT_EQ(admit({}, "a", {2, 4}).kind, Admission::Kind::kAdmit);
  EXPECT_EQ(admit({{"a", {1, 1}}, {"b", {2, 0}}}, "a", {2, 4}).kind, Admission::Kind::kAdmit);
}

TEST(Admission, AUserAtTheirBoundShedsTheirOwnWaitingConnectionNotAnothersRoom) {
  Admission own = admit({{"a", {2, 1}}}, "a", {2, 100});
  EXPECT_EQ(own.kind, Admission::Kind::kShed);
  EXPECT_EQ(own.shed_from, "a");
  EXPECT_THAT(own.reason, HasSubstr("the limit per user"));
  // Every one of them answered but not yet written: nothing to shed.
  Admission busy = admit({{"a", {2, 0}}}, "a", {2, 100});
  EXPECT_EQ(busy.kind, Admission::Kind::kRefuse);
  EXPECT_THAT(busy.reason, HasSubstr("you have 2 connections open"));
}

TEST(Admission, AtTheTotalTheHeaviestUserIsShedForANewcomer) {
  const std::map<std::string, Occupancy> users = {{"a", {3, 3}}, {"b", {1, 1}}};
  Admission c = admit(users, "c", {3, 4});
  EXPECT_EQ(c.kind, Admission::Kind::kShed);
  EXPECT_EQ(c.shed_from, "a");
  EXPECT_THAT(c.reason, HasSubstr("you held the most (3)"));
  // Shedding a user for one who would then hold as many is no fairer: refused.
  Admission b = admit({{"a", {2, 2}}, {"b", {2, 2}}}, "b", {3, 4});
  EXPECT_EQ(b.kind, Admission::Kind::kRefuse);
  EXPECT_THAT(b.reason, HasSubstr("4 connections open, its limit"));
  // A user with nothing waiting is not shed, whatever they hold; the next
  // heaviest who is waiting is, if they hold more than the newcomer would.
  Admission d = admit({{"a", {3, 0}}, {"b", {2, 1}}}, "c", {3, 5});
  EXPECT_EQ(d.kind, Admission::Kind::kShed);
  EXPECT_EQ(d.shed_from, "b");
  EXPECT_EQ(admit({{"a", {3, 0}}, {"b", {1, 1}}}, "c", {3, 4}).kind, Admission::Kind::kRefuse);
}

}  // namespace
}  // namespace colo
