#include "sched/class_queue.h"

#include <gtest/gtest.h>

#include <set>

namespace colo {
namespace {

struct Queued {
  std::string signature;
  int priority = 0;
  uint32_t owner = 0;
  std::string family;
};

ClassQueue make_queue(size_t depth, size_t window, const std::vector<Queued>& jobs) {
  ClassQueue q(depth, window);
  for (size_t i = 0; i < jobs.size(); ++i) {
    QueuedJob job;
    job.job = i;
    job.signature = jobs[i].signature;
    job.priority = jobs[i].priority;
    job.owner = jobs[i].owner;
    job.family = jobs[i].family;
    q.push(std::move(job));
  }
  return q;
}

std::vector<std::string> head_signatures(const std::vector<ClassQueue::Head>& heads) {
  std::vector<std::string> out;
  for (const auto& [seq, cls] : heads) out.push_back(cls->first);
  return out;
}

// The classes successive events try.
struct WalkCase {
  std::string name;
  size_t depth = 0;
  size_t window = 0;
  std::vector<Queued> jobs;
  std::map<uint32_t, double> usage;
  std::set<std::string> first;  // the caller's classes to try first
  std::vector<std::vector<std::string>> walks;
};

class ClassWalks : public testing::TestWithParam<WalkCase> {};

TEST_P(ClassWalks, TryTheClassesInOrderWithAMovingBackfillWindow) {
  const WalkCase& c = GetParam();
  ClassQueue q = make_queue(c.depth, c.window, c.jobs);
  q.set_usage(c.usage);
  std::function<bool(const std::string&)> first;
  if (!c.first.empty()) first = [&](const std::string& sig) { return c.first.contains(sig); };
  // The same walks into vectors kept from event to event (emptied by each).
  ClassQueue kept = make_queue(c.depth, c.window, c.jobs);
  kept.set_usage(c.usage);
  std::vector<ClassQueue::Head> peeked = q.heads_to_try(first);
  std::vector<ClassQueue::Head> walked = peeked;
  for (size_t i = 0; i < c.walks.size(); ++i) {
    EXPECT_EQ(head_signatures(q.heads_to_try(first)), c.walks[i]) << "event " << i << ", peeked";
    EXPECT_EQ(head_signatures(q.walk(first)), c.walks[i]) << "event " << i;
    kept.heads_to_try(first, peeked);
    EXPECT_EQ(head_signatures(peeked), c.walks[i]) << "event " << i << ", peeked into a vector";
    kept.walk(first, walked);
    EXPECT_EQ(head_signatures(walked), c.walks[i]) << "event " << i << ", into a vector";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ClassWalks,
    testing::Values(
        WalkCase{"every_class_by_arrival_when_unbounded",
                 0,
                 1,
                 {{"a"}, {"b"}, {"a"}, {"c"}},
                 {},
                 {},
                 {{"a", "b", "c"}, {"a", "b", "c"}}},
        WalkCase{"every_class_while_the_queue_is_short",
                 2,
                 1,
                 {{"a"}, {"b"}, {"c"}},
                 {},
                 {},
                 {{"a", "b", "c"}}},
        WalkCase{"the_window_moves_on_each_event",
                 1,
                 1,
                 {{"a"}, {"b"}, {"c"}, {"d"}},
                 {},
                 {},
                 {{"a", "b"}, {"a", "c"}, {"a", "d"}, {"a", "b"}}},
        WalkCase{"the_window_wraps_round",
                 1,
                 2,
                 {{"a"}, {"b"}, {"c"}, {"d"}},
                 {},
                 {},
                 {{"a", "b", "c"}, {"a", "d", "b"}, {"a", "c", "d"}}},
        WalkCase{
            "higher_priority_first", 0, 1, {{"a"}, {"b", 5}, {"c"}}, {}, {}, {{"b", "a", "c"}}},
        WalkCase{"the_owner_who_used_least_first",
                 0,
                 1,
                 {{"a", 0, 1}, {"b", 0, 2}},
                 {{1, 10.0}, {2, 1.0}},
                 {},
                 {{"b", "a"}}},
        WalkCase{"the_callers_first_classes_first",
                 0,
                 1,
                 {{"a"}, {"b"}, {"c"}},
                 {},
                 {"c"},
                 {{"c", "a", "b"}}},
        WalkCase{"priority_over_the_callers_first",
                 0,
                 1,
                 {{"a"}, {"b", 1}, {"c"}},
                 {},
                 {"c"},
                 {{"b", "c", "a"}}},
        WalkCase{"ordered_and_bounded_the_window_goes_by_arrival",
                 1,
                 1,
                 {{"a"}, {"b", 1}, {"c"}, {"d"}},
                 {},
                 {},
                 {{"b", "a"}, {"b", "c"}, {"b", "d"}, {"b", "a"}}}),
    [](const auto& info) { return info.param.name; });

// What leaves the queue, and what it counts after.
struct Removal {
  std::string name;
  std::function<std::vector<size_t>(ClassQueue&)> act;  // returns the jobs it took
  std::vector<size_t> taken;
  size_t size = 0;
  std::vector<uint64_t> head_seqs;
  size_t in_family_f = 0;
  bool heads_changed = false;
};

class ClassRemovals : public testing::TestWithParam<Removal> {};

// Jobs 0..3: a (family f), b, a (family f), c; job 4 a retry of a (family f).
TEST_P(ClassRemovals, KeepTheCountsAndHeads) {
  const Removal& c = GetParam();
  ClassQueue q = make_queue(0, 0, {{"a", 0, 0, "f"}, {"b"}, {"a", 0, 0, "f"}, {"c"}});
  QueuedJob retry;
  retry.job = 4;
  retry.signature = "a";
  retry.seq = 9;
  retry.family = "f";
  q.push_retry(retry);
  ASSERT_EQ(q.size(), 5u);
  ASSERT_EQ(q.in_family("f"), 2u) << "retries are not counted in their family";
  const uint64_t changes = q.changes();
  EXPECT_EQ(c.act(q), c.taken);
  EXPECT_EQ(q.size(), c.size);
  std::vector<uint64_t> seqs;
  for (const auto& [seq, cls] : q.heads()) seqs.push_back(seq);
  EXPECT_EQ(seqs, c.head_seqs);
  EXPECT_EQ(q.in_family("f"), c.in_family_f);
  // Only class a holds jobs of f: it is named while one of them is queued.
  std::vector<std::string> of_f;
  for (const std::string* signature : q.classes_in_family("f")) of_f.push_back(*signature);
  EXPECT_EQ(of_f, c.in_family_f > 0 ? std::vector<std::string>{"a"} : std::vector<std::string>{});
  EXPECT_EQ(q.changes() != changes, c.heads_changed);
}

ClassQueue::Class& class_with_head(ClassQueue& q, uint64_t seq) { return *q.heads().at(seq); }

INSTANTIATE_TEST_SUITE_P(
    Table, ClassRemovals,
    testing::Values(
        Removal{"pop_a_head_the_class_is_known_by_its_next_job",
                [](ClassQueue& q) {
                  q.pop_head(class_with_head(q, 0));
                  return std::vector<size_t>{};
                },
                {},
                4,
                {1, 2, 3},
                1,
                true},
        Removal{"pop_the_last_job_the_class_leaves_the_heads",
                [](ClassQueue& q) {
                  q.pop_head(class_with_head(q, 1));
                  return std::vector<size_t>{};
                },
                {},
                4,
                {0, 3},
                2,
                true},
        Removal{"remove_a_job_behind_a_head_changes_no_head",
                [](ClassQueue& q) { return std::vector<size_t>{q.remove(2) ? 2u : 99u}; },
                {2},
                4,
                {0, 1, 3},
                1,
                false},
        Removal{"remove_a_retry",
                [](ClassQueue& q) { return std::vector<size_t>{q.remove(4) ? 4u : 99u}; },
                {4},
                4,
                {0, 1, 3},
                2,
                false},
        Removal{"remove_an_unknown_job",
                [](ClassQueue& q) { return std::vector<size_t>{q.remove(7) ? 7u : 99u}; },
                {99},
                5,
                {0, 1, 3},
                2,
                false},
        Removal{"take_a_class",
                [](ClassQueue& q) {
                  std::vector<size_t> jobs;
                  for (const QueuedJob& j : q.take_class("a")) jobs.push_back(j.job);
                  return jobs;
                },
                {0, 2},
                3,
                {1, 3},
                0,
                true},
        Removal{"drain_everything_by_seq",
                [](ClassQueue& q) { return q.drain(); },
                {0, 1, 2, 3, 4},
                0,
                {},
                0,
                true},
        Removal{"start_the_retries",
                [](ClassQueue& q) {
                  std::vector<size_t> started;
                  q.start_retries([&](const QueuedJob& j) {
                    started.push_back(j.job);
                    return true;
                  });
                  return started;
                },
                {4},
                4,
                {0, 1, 3},
                2,
                false}),
    [](const auto& info) { return info.param.name; });

// What a bounded walk in arrival order tries, from heads() and
// backfill_from() alone (the Order paragraph of class_queue.h), and where
// the next window starts.
struct Listed {
  std::vector<uint64_t> seqs;
  uint64_t next = 0;
};
Listed listed_afresh(const ClassQueue& q, size_t depth, size_t window) {
  std::vector<uint64_t> all;
  for (const auto& [seq, cls] : q.heads()) all.push_back(seq);
  if (depth == 0 || all.size() <= depth + window) return {all, q.backfill_from()};
  Listed out{{all.begin(), all.begin() + static_cast<std::ptrdiff_t>(depth)}, 0};
  const std::vector<uint64_t> rest(all.begin() + static_cast<std::ptrdiff_t>(depth), all.end());
  size_t i = 0;
  while (i < rest.size() && rest[i] < q.backfill_from()) ++i;
  for (size_t k = 0; k < window; ++k, ++i) {
    if (i == rest.size()) i = 0;
    out.seqs.push_back(rest[i]);
  }
  out.next = i == rest.size() ? 0 : rest[i];
  return out;
}

std::vector<uint64_t> seqs_of(const std::vector<ClassQueue::Head>& heads) {
  std::vector<uint64_t> out;
  for (const auto& [seq, cls] : heads) out.push_back(seq);
  return out;
}

// Steps on a queue of classes a..l (one job each, m with two), depth 2,
// window 3: "walk" (an event), "peek" (heads_to_try()), "pop" (the first
// head starts), "pop2" (the third head starts), "push X" (a job of X),
// "remove N" (job N), "take X" (class X leaves).
struct ListingCase {
  std::string name;
  std::vector<std::string> steps;
};

class KeptListings : public testing::TestWithParam<ListingCase> {};

// A listing kept from one call to the next is what listing afresh gives,
// after every step (a stale one would try other classes, or move the window
// elsewhere).
TEST_P(KeptListings, AreWhatListingAfreshGives) {
  constexpr size_t kDepth = 2;
  constexpr size_t kWindow = 3;
  std::vector<Queued> jobs;
  for (char c = 'a'; c <= 'l'; ++c) jobs.push_back({std::string(1, c)});
  jobs.push_back({"m"});
  jobs.push_back({"m"});
  ClassQueue q = make_queue(kDepth, kWindow, jobs);
  size_t next_job = jobs.size();
  std::vector<ClassQueue::Head> kept;
  for (size_t i = 0; i < GetParam().steps.size(); ++i) {
    const std::string& step = GetParam().steps[i];
    const Listed before = listed_afresh(q, kDepth, kWindow);
    if (step == "walk") {
      q.walk({}, kept);
      EXPECT_EQ(seqs_of(kept), before.seqs) << "step " << i << ": " << step;
      EXPECT_EQ(q.backfill_from(), before.next) << "step " << i << ": the next window";
    } else if (step == "peek") {
      const uint64_t from = q.backfill_from();
      q.heads_to_try({}, kept);
      EXPECT_EQ(seqs_of(kept), before.seqs) << "step " << i << ": " << step;
      EXPECT_EQ(q.backfill_from(), from) << "step " << i << ": peeking moves no window";
    } else if (step == "pop" || step == "pop2") {
      auto head = q.heads().begin();
      if (step == "pop2") std::advance(head, 2);
      q.pop_head(*head->second);
    } else if (step.starts_with("push ")) {
      QueuedJob job;
      job.job = next_job++;
      job.signature = step.substr(5);
      q.push(std::move(job));
    } else if (step.starts_with("remove ")) {
      EXPECT_TRUE(q.remove(std::stoul(step.substr(7)))) << "step " << i;
    } else if (step.starts_with("take ")) {
      EXPECT_FALSE(q.take_class(step.substr(5)).empty()) << "step " << i;
    } else {
      FAIL() << "unknown step " << step;
    }
    EXPECT_EQ(seqs_of(q.heads_to_try({})), listed_afresh(q, kDepth, kWindow).seqs)
        << "after step " << i << ": " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, KeptListings,
    testing::Values(
        ListingCase{"walks_one_after_another", {"walk", "walk", "walk", "walk", "walk"}},
        ListingCase{"a_peek_then_the_walk_it_foretold",
                    {"peek", "walk", "peek", "walk", "peek", "peek", "walk"}},
        ListingCase{"a_head_starts_between_peek_and_walk",
                    {"peek", "pop", "walk", "peek", "pop2", "walk", "walk"}},
        ListingCase{"a_class_of_two_jobs_keeps_its_place",
                    {"peek", "take a", "take b", "walk", "peek", "pop", "walk"}},
        ListingCase{"new_classes_join_the_window",
                    {"peek", "push n", "walk", "peek", "push o", "push a", "walk", "walk"}},
        ListingCase{"a_job_behind_a_head_or_a_head_removed",
                    {"peek", "remove 13", "walk", "peek", "remove 12", "walk", "walk"}},
        ListingCase{"down_to_an_unbounded_walk_and_back",
                    {"peek", "take a", "take b", "take c", "take d", "take e", "take f", "take g",
                     "take h", "walk", "push x", "push y", "walk", "peek", "walk"}}),
    [](const auto& info) { return info.param.name; });

TEST(ClassQueueTest, ClassesInFamilyNameEachClassHoldingOneOfItsJobsOnce) {
  ClassQueue q(0, 0);
  q.push(QueuedJob{.job = 0, .signature = "a", .family = "f"});
  q.push(QueuedJob{.job = 1, .signature = "b", .family = "f"});
  q.push(QueuedJob{.job = 2, .signature = "a", .family = "f"});
  q.push(QueuedJob{.job = 3, .signature = "c", .family = "g"});
  auto names = [&](const std::string& family) {
    std::set<std::string> out;
    for (const std::string* signature : q.classes_in_family(family)) out.insert(*signature);
    EXPECT_EQ(out.size(), q.classes_in_family(family).size()) << "each class once";
    return out;
  };
  EXPECT_EQ(names("f"), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(names("g"), (std::set<std::string>{"c"}));
  EXPECT_EQ(names("h"), (std::set<std::string>{}));
  q.pop_head(*q.heads().at(0));
  EXPECT_EQ(names("f"), (std::set<std::string>{"a", "b"})) << "a still holds job 2";
  q.pop_head(*q.heads().at(2));
  EXPECT_EQ(names("f"), (std::set<std::string>{"b"}));
  EXPECT_TRUE(q.remove(1));
  EXPECT_EQ(names("f"), (std::set<std::string>{}));
}

TEST(ClassQueueTest, NewJobsTakeTheNextSeqAndRetriesKeepTheirs) {
  ClassQueue q(0, 0);
  q.push(QueuedJob{.job = 5, .signature = "a", .seq = 40});
  q.push(QueuedJob{.job = 6, .signature = "a"});
  EXPECT_EQ(q.heads().begin()->first, 0u) << "push numbers jobs in arrival order";
  EXPECT_EQ(q.in_class("a"), 2u);
  EXPECT_EQ(q.in_class("b"), 0u);
  q.push_retry(QueuedJob{.job = 7, .signature = "b", .seq = 40});
  bool kept = false;
  q.start_retries([&](const QueuedJob& j) {
    kept = j.seq == 40;
    return false;
  });
  EXPECT_TRUE(kept);
  EXPECT_EQ(q.size(), 3u) << "a retry not started stays";
}

}  // namespace
}  // namespace colo
