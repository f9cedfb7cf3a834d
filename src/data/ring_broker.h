// RingBroker: the bookkeeping of a shared loader's ring, with no I/O: which
// chunk of the sample stream goes into which slot, which consumer is given
// which batch, and when a slot may be reused. The loader process
// (loader_server) feeds it events and carries out its answers; tests drive
// it directly. docs/data-sharing.md explains the design.
//
// The stream. SampleOrder numbers samples epoch after epoch; the stream is
// cut into chunks of `chunk_samples` consecutive positions, and a chunk is
// decoded into one slot of the ring (a pool of `slots` slots in shared
// memory). Chunks are published in stream order.
//
// Consumers. A consumer joins at a chunk boundary `start`, chosen as early as
// the data still in the ring allows (so it starts at once) but never in an
// epoch whose successor's order exists (SampleOrder's invariant needs its
// offset before the next order is made). Its epoch e is the N positions
// [start + eN, start + (e+1)N); its batches are consecutive runs of
// `batch_size` positions inside an epoch, the last one shorter. So every
// consumer sees every sample exactly once per epoch, whenever it joined and
// whatever its batch size.
//
// Invariants (checked by the tests):
//  - A slot is reused only when no consumer needs its chunk: an active
//    consumer needs every chunk at or after its oldest unreleased position;
//    any consumer (active or detached) needs the chunks of batches it holds
//    (granted, not released) until it releases them or leaves.
//  - A batch is granted only from published chunks, which are never
//    overwritten while granted: a consumer is never given overwritten data.
//  - A consumer holds the others back while another consumer waits for a
//    chunk that no slot is free for and it holds the oldest chunk. One that
//    does so for a net `lag_timeout_ms` (each millisecond in which no one is
//    held back takes one off) is detached: it gets an error instead of
//    batches; the ring no longer waits for it; the batches it holds stay
//    valid until it releases them.
//  - A consumer that leaves (or whose process dies: the loader sees its
//    socket close) releases everything at once.
// Not thread-safe: the loader's control thread owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "data/sample_order.h"

namespace colo {

struct BrokerOptions {
  uint64_t dataset_size = 0;        // N samples
  uint32_t chunk_samples = 16;      // samples per slot
  uint32_t slots = 64;              // slots in the ring
  uint32_t max_consumers = 64;      // consumers present at once
  int64_t lag_timeout_ms = 30'000;  // net time a consumer may hold the others back
  uint64_t seed = 1;                // sample order
};

// `count` samples starting at sample `first` of slot `slot`.
struct Piece {
  uint32_t slot = 0;
  uint32_t first = 0;
  uint32_t count = 0;
  bool operator==(const Piece&) const = default;
};

struct BatchGrant {
  uint64_t position = 0;  // stream position of its first sample
  int64_t epoch = 0;      // the consumer's epoch, 0 = its first
  int64_t index = 0;      // batch within that epoch
  uint32_t count = 0;
  bool last = false;  // the epoch's last batch
  std::vector<Piece> pieces;
};

// Work for a decoding thread: decode `samples` (dataset indices) into `slot`.
struct ChunkJob {
  uint64_t chunk = 0;
  uint32_t slot = 0;
  uint64_t first_position = 0;
  std::vector<uint32_t> samples;
};

// An answer to a consumer's request: a batch, or why it gets none.
struct BrokerReply {
  int consumer = 0;
  std::optional<BatchGrant> batch;
  std::string error;  // set when detached
};

struct ConsumerRecord {
  int id = 0;
  int pid = 0;
  std::string name;  // the job, when known
  uint32_t batch_size = 0;
  int64_t joined_ms = 0;
  int64_t left_ms = -1;  // -1: still there
  uint64_t start = 0;    // stream position it joined at
  uint64_t samples = 0;  // granted
  int64_t batches = 0;
  int64_t epochs = 0;        // epochs whose last batch it was granted
  int64_t pending_ms = 0;    // time its requests waited here for data
  int64_t wait_ms = 0;       // time it says it was blocked waiting (report_wait)
  int64_t held_back_ms = 0;  // time it held the others back
  std::string detached;      // the reason, when detached
};

struct BrokerStats {
  uint64_t chunks_assigned = 0;
  uint64_t chunks_published = 0;
  int64_t epochs_ordered = 0;       // SampleOrder's latest epoch + 1
  int64_t starved_full_ms = 0;      // a consumer waited for a slot to be released
  int64_t starved_decoding_ms = 0;  // a consumer waited for decoding
};

class RingBroker {
 public:
  explicit RingBroker(const BrokerOptions& options);

  const BrokerOptions& options() const { return options_; }

  // A consumer joins; returns its id. Errors: too many consumers, a batch
  // that the ring cannot hold three times over.
  Result<int> join(uint32_t batch_size, int pid, const std::string& name, int64_t now_ms);
  // It leaves (or died): everything it held is released.
  void leave(int consumer, int64_t now_ms);
  // Releases its `count` oldest granted batches.
  void release(int consumer, int count);
  // Asks for its next batch; answered (take_replies) once the data is
  // published, at once when it is. A detached consumer gets its error.
  void request(int consumer, int64_t now_ms);
  // The consumer's own count of time blocked waiting for batches (its
  // requests may be sent ahead, so pending time overstates its waiting).
  void report_wait(int consumer, int64_t wait_ms);
  // Gives up the rest of its current epoch: its next batch is the first of
  // the next epoch (an abandoned iteration).
  void skip_epoch(int consumer);

  // The next chunk to decode into a free slot, or none (no free slot, or no
  // consumer and the prefetch reached the end of the epoch).
  std::optional<ChunkJob> next_job();
  // A chunk's slot is filled.
  void completed(uint64_t chunk, int64_t now_ms);
  // Time passes: waiting and lag accounting, detaching.
  void tick(int64_t now_ms);

  std::vector<BrokerReply> take_replies();

  // For monitoring and tests.
  std::vector<ConsumerRecord> consumers() const;  // present and past, by id
  BrokerStats stats() const;
  size_t free_slots() const { return free_.size(); }
  size_t active_consumers() const;
  uint64_t start_of(int consumer) const;
  // The chunk a slot holds (or is being filled with); nullopt when free.
  std::optional<uint64_t> chunk_in_slot(uint32_t slot) const;

 private:
  struct Held {
    uint64_t from = 0;
    uint64_t to = 0;
  };
  struct Consumer {
    ConsumerRecord record;
    bool active = true;  // false: detached
    uint64_t next = 0;   // next position to grant
    std::deque<Held> held;
    bool pending = false;
    int64_t pending_since = 0;
    int64_t blame_ms = 0;
    uint64_t released() const { return held.empty() ? next : held.front().from; }
  };
  struct Chunk {
    uint32_t slot = 0;
    bool published = false;
  };

  uint64_t chunk_of(uint64_t position) const { return position / options_.chunk_samples; }
  bool needed(uint64_t chunk) const;
  void collect();
  // Grants the pending request of `c` if its data is published.
  void try_answer(Consumer& c, int64_t now_ms);
  std::optional<BatchGrant> next_batch(const Consumer& c) const;
  uint32_t next_batch_count(const Consumer& c) const;
  bool starving(const Consumer& c) const;
  void detach(Consumer& c, std::string reason, int64_t now_ms);

  BrokerOptions options_;
  SampleOrder order_;
  std::map<int, Consumer> consumers_;  // present and past
  std::map<uint64_t, Chunk> chunks_;   // chunks in slots (filling or published)
  std::vector<uint32_t> free_;         // free slots
  std::set<uint64_t> done_out_of_order_;
  uint64_t assigned_ = 0;   // chunks [0, assigned_) were handed to decoders
  uint64_t published_ = 0;  // chunks [0, published_) are published
  int next_id_ = 1;
  int64_t last_tick_ms_ = -1;
  BrokerStats stats_;
  std::vector<BrokerReply> replies_;
};

}  // namespace colo
