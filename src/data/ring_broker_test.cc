#include "data/ring_broker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace colo {
namespace {

// Drives a RingBroker as the loader does, with a model of what each slot
// holds, and checks every invariant on every step:
//  - a slot handed to a decoder is held by no consumer;
//  - a granted batch reads only published slots holding the right chunk;
//  - each consumer's every full epoch holds every sample exactly once.
class Harness {
 public:
  explicit Harness(BrokerOptions options) : broker(options), n_(options.dataset_size) {}

  RingBroker broker;
  int64_t now = 0;

  struct View {
    uint32_t batch_size = 0;
    std::vector<std::vector<Piece>> held;  // granted, not yet released
    std::multiset<uint32_t> epoch_samples;
    int64_t epoch = 0;
    int64_t epochs_checked = 0;
    bool waiting = false;
    std::string error;
  };
  std::map<int, View> views;

  int join(uint32_t batch_size) {
    Result<int> id = broker.join(batch_size, 100, "job", now);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message());
    views[*id].batch_size = batch_size;
    return *id;
  }
  void leave(int id) {
    broker.leave(id, now);
    views.erase(id);
  }
  void request(int id) {
    views[id].waiting = true;
    broker.request(id, now);
    absorb();
  }
  void release(int id, int count = 1) {
    View& v = views[id];
    for (int i = 0; i < count && !v.held.empty(); ++i) v.held.erase(v.held.begin());
    broker.release(id, count);
  }
  // Hands out decoding jobs until the broker has none, then finishes up to
  // `finish` of them (in a shuffled order).
  void decode(size_t finish, std::mt19937_64& rng) {
    while (std::optional<ChunkJob> job = broker.next_job()) {
      for (const auto& [id, v] : views)
        for (const auto& batch : v.held)
          for (const Piece& p : batch)
            ASSERT_NE(p.slot, job->slot)
                << "slot " << job->slot << " reused while consumer " << id << " holds it";
      slot_chunk_[job->slot] = job->chunk;
      slot_samples_.erase(job->slot);
      in_flight_.push_back(*job);
    }
    std::shuffle(in_flight_.begin(), in_flight_.end(), rng);
    for (size_t i = 0; i < finish && !in_flight_.empty(); ++i) {
      ChunkJob job = in_flight_.back();
      in_flight_.pop_back();
      slot_samples_[job.slot] = job.samples;
      broker.completed(job.chunk, now);
    }
    absorb();
  }
  void tick(int64_t ms) {
    now += ms;
    broker.tick(now);
    absorb();
  }

  void absorb() {
    for (BrokerReply& r : broker.take_replies()) {
      auto it = views.find(r.consumer);
      ASSERT_NE(it, views.end());
      View& v = it->second;
      ASSERT_TRUE(v.waiting) << "a reply to consumer " << r.consumer << " that did not ask";
      v.waiting = false;
      if (!r.batch) {
        v.error = r.error;
        continue;
      }
      const BatchGrant& b = *r.batch;
      ASSERT_EQ(b.epoch, v.epoch);
      ASSERT_LE(b.count, v.batch_size);
      uint32_t total = 0;
      uint64_t position = b.position;
      for (const Piece& p : b.pieces) {
        ASSERT_TRUE(slot_samples_.count(p.slot)) << "piece of an unpublished slot";
        ASSERT_EQ(slot_chunk_[p.slot], position / chunk()) << "slot holds another chunk";
        const std::vector<uint32_t>& samples = slot_samples_[p.slot];
        for (uint32_t k = 0; k < p.count; ++k) v.epoch_samples.insert(samples[p.first + k]);
        total += p.count;
        position += p.count;
      }
      ASSERT_EQ(total, b.count);
      v.held.push_back(b.pieces);
      if (b.last) {
        ASSERT_EQ(v.epoch_samples.size(), n_) << "consumer " << r.consumer << " epoch " << v.epoch;
        uint32_t expect = 0;
        for (uint32_t s : v.epoch_samples) ASSERT_EQ(s, expect++) << "not exactly once";
        v.epoch_samples.clear();
        ++v.epoch;
        ++v.epochs_checked;
      }
    }
  }

  uint32_t chunk() const { return broker.options().chunk_samples; }

 private:
  uint64_t n_;
  std::map<uint32_t, uint64_t> slot_chunk_;
  std::map<uint32_t, std::vector<uint32_t>> slot_samples_;
  std::vector<ChunkJob> in_flight_;
};

BrokerOptions small(uint64_t n = 100, uint32_t chunk = 8, uint32_t slots = 40) {
  BrokerOptions o;
  o.dataset_size = n;
  o.chunk_samples = chunk;
  o.slots = slots;
  o.lag_timeout_ms = 2'000;
  return o;
}

// One step of a consumer that releases its previous batch and asks for the next.
void step(Harness& h, int id) {
  if (h.views[id].waiting) return;
  h.release(id);
  h.request(id);
}

TEST(RingBrokerTest, ThreeConsumersJoiningAtDifferentTimesSeeEverySampleOncePerEpoch) {
  Harness h(small());
  std::mt19937_64 rng(7);
  const int a = h.join(7);
  for (int i = 0; i < 9; ++i) {
    step(h, a);
    h.decode(3, rng);
  }
  const int b = h.join(16);  // mid-epoch of a
  for (int i = 0; i < 23; ++i) {
    step(h, a);
    step(h, b);
    h.decode(2, rng);
  }
  const int c = h.join(33);
  for (int i = 0; i < 400; ++i) {
    step(h, a);
    if (i % 2 == 0) step(h, b);
    if (i % 3 == 0) step(h, c);
    h.decode(2, rng);
  }
  EXPECT_GE(h.views[a].epochs_checked, 3);
  EXPECT_GE(h.views[b].epochs_checked, 3);
  EXPECT_GE(h.views[c].epochs_checked, 3);
  EXPECT_NE(h.broker.start_of(b) % 100, 0U) << "b should have joined mid-epoch";
}

TEST(RingBrokerTest, RandomJoinsLeavesSkipsAndSpeedsKeepEveryInvariant) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> pct(0, 99);
    const uint64_t n = 20 + rng() % 200;
    const uint32_t chunk = 1 + static_cast<uint32_t>(rng() % 16);
    BrokerOptions o = small(n, chunk, 0);
    const uint32_t biggest_batch = 40;
    o.slots = 3 * ((biggest_batch + chunk - 1) / chunk + 1) + static_cast<uint32_t>(rng() % 30);
    o.seed = seed;
    Harness h(o);
    std::vector<int> present;
    for (int t = 0; t < 1500; ++t) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " t " << t);
      if (present.size() < 5 && pct(rng) < 3)
        present.push_back(h.join(1 + static_cast<uint32_t>(rng() % biggest_batch)));
      if (!present.empty() && pct(rng) < 1) {
        size_t k = rng() % present.size();
        h.leave(present[k]);
        present.erase(present.begin() + static_cast<long>(k));
      }
      for (int id : present) {
        if (pct(rng) < 40) step(h, id);
        if (pct(rng) < 1 && !h.views[id].waiting) {
          // An abandoned iteration: the rest of this epoch is skipped.
          h.broker.skip_epoch(id);
          Harness::View& v = h.views[id];
          if (!v.epoch_samples.empty()) {
            v.epoch_samples.clear();
            ++v.epoch;
          }
        }
      }
      h.decode(static_cast<size_t>(rng() % 4), rng);
      h.tick(10);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(RingBrokerTest, ALaggingConsumerIsDetachedAndItsHeldBatchStaysValid) {
  Harness h(small(400, 8, 12));
  std::mt19937_64 rng(1);
  const int slow = h.join(8);
  const int fast = h.join(8);
  step(h, slow);
  h.decode(10, rng);
  ASSERT_EQ(h.views[slow].held.size(), 1U);  // slow holds one batch and never asks again
  for (int i = 0; i < 300 && h.views[slow].error.empty(); ++i) {
    step(h, fast);
    h.decode(10, rng);
    h.tick(100);
  }
  // fast waited (the ring was full because of slow) until slow was detached.
  std::vector<ConsumerRecord> records = h.broker.consumers();
  const ConsumerRecord& s = records[0];
  EXPECT_NE(s.detached.find("detached by the shared data loader"), std::string::npos) << s.detached;
  EXPECT_NE(s.detached.find("lag_timeout 2.0s"), std::string::npos) << s.detached;
  EXPECT_GE(s.held_back_ms, 2000);
  // The ring goes on for fast; slow's held batch is never overwritten
  // (Harness::decode asserts it) until slow releases it.
  const int64_t before = h.views[fast].epochs_checked;
  for (int i = 0; i < 200; ++i) {
    step(h, fast);
    h.decode(10, rng);
    h.tick(10);
  }
  EXPECT_GT(h.views[fast].epochs_checked, before + 2);
  // A detached consumer gets its error, not data.
  h.request(slow);
  EXPECT_NE(h.views[slow].error.find("detached"), std::string::npos);
}

TEST(RingBrokerTest, ANetBalanceForgivesAConsumerThatKeepsUp) {
  Harness h(small(400, 8, 12));
  std::mt19937_64 rng(1);
  const int a = h.join(8);
  const int b = h.join(8);
  // b pauses now and then long enough to fill the ring and hold a back, then
  // catches up (running twice as fast until it has); no one is held back
  // most of the time.
  for (int i = 0; i < 2000; ++i) {
    step(h, a);
    if (i % 100 >= 15) {
      step(h, b);
      h.decode(10, rng);
      std::vector<ConsumerRecord> r = h.broker.consumers();
      if (r[1].samples < r[0].samples) step(h, b);
    }
    h.decode(10, rng);
    h.tick(50);
  }
  std::vector<ConsumerRecord> records = h.broker.consumers();
  for (const ConsumerRecord& r : records) EXPECT_EQ(r.detached, "") << r.id;
  EXPECT_GT(records[1].held_back_ms, 2000) << "in all b held a back longer than lag_timeout";
}

TEST(RingBrokerTest, LeavingReleasesEverySlotAndTheNextConsumerStartsAtOnce) {
  Harness h(small(100, 8, 20));
  std::mt19937_64 rng(3);
  const int a = h.join(16);
  for (int i = 0; i < 4; ++i) {
    h.request(a);  // holds every batch
    h.decode(20, rng);
  }
  EXPECT_EQ(h.broker.free_slots(), 0U);
  h.leave(a);
  h.decode(20, rng);
  // With no consumer, the ring prefetches to the end of the epoch and stops.
  for (int i = 0; i < 10; ++i) h.decode(20, rng);
  EXPECT_FALSE(h.broker.next_job().has_value());
  const int b = h.join(8);
  h.request(b);
  EXPECT_EQ(h.views[b].held.size(), 1U) << "b should be served from prefetched data";
}

TEST(RingBrokerTest, ABatchTooLargeForTheRingIsRefused) {
  RingBroker broker(small(100, 8, 12));
  Result<int> id = broker.join(64, 1, "big", 0);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message().find("too large for this loader's ring"), std::string::npos);
  EXPECT_FALSE(broker.join(0, 1, "zero", 0).ok());
}

TEST(RingBrokerTest, TooManyConsumersAreRefused) {
  BrokerOptions o = small();
  o.max_consumers = 2;
  RingBroker broker(o);
  ASSERT_TRUE(broker.join(4, 1, "a", 0).ok());
  ASSERT_TRUE(broker.join(4, 2, "b", 0).ok());
  EXPECT_FALSE(broker.join(4, 3, "c", 0).ok());
}

TEST(RingBrokerTest, WaitTimeIsCountedWhileARequestWaitsForData) {
  Harness h(small());
  std::mt19937_64 rng(1);
  const int a = h.join(8);
  h.request(a);
  h.tick(250);
  h.decode(40, rng);
  EXPECT_EQ(h.broker.consumers()[0].pending_ms, 250);
  EXPECT_EQ(h.broker.consumers()[0].batches, 1);
  h.broker.report_wait(a, 120);
  EXPECT_EQ(h.broker.consumers()[0].wait_ms, 120);
}

}  // namespace
}  // namespace colo
