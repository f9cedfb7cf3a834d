#include "data/ring_broker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "common/units.h"

namespace colo {

RingBroker::RingBroker(const BrokerOptions& options)
    : options_(options), order_(options.dataset_size, options.seed) {
  assert(options_.dataset_size > 0 && options_.chunk_samples > 0 && options_.slots > 0);
  for (uint32_t s = options_.slots; s > 0; --s) free_.push_back(s - 1);
}

size_t RingBroker::active_consumers() const {
  return static_cast<size_t>(std::count_if(
      consumers_.begin(), consumers_.end(),
      [](const auto& kv) { return kv.second.record.left_ms < 0 && kv.second.active; }));
}

uint64_t RingBroker::start_of(int consumer) const { return consumers_.at(consumer).record.start; }

std::optional<uint64_t> RingBroker::chunk_in_slot(uint32_t slot) const {
  for (const auto& [chunk, c] : chunks_)
    if (c.slot == slot) return chunk;
  return std::nullopt;
}

Result<int> RingBroker::join(uint32_t batch_size, int pid, const std::string& name,
                             int64_t now_ms) {
  size_t present = 0;
  for (const auto& [id, c] : consumers_) present += c.record.left_ms < 0;
  if (present >= options_.max_consumers) {
    return Error(fmt::format("the loader already serves {} consumers, its limit", present));
  }
  const uint64_t chunks_per_batch =
      (batch_size + options_.chunk_samples - 1) / options_.chunk_samples + 1;
  if (batch_size == 0 || 3 * chunks_per_batch > options_.slots) {
    return Error(fmt::format(
        "batch size {} is too large for this loader's ring ({} slots of {} samples: a batch may "
        "use at most a third of it); use a smaller batch or a larger ring",
        batch_size, options_.slots, options_.chunk_samples));
  }
  // The earliest chunk still held contiguously up to the newest one ...
  uint64_t retained = assigned_;
  while (retained > 0 && chunks_.count(retained - 1) > 0) --retained;
  // ... but not before the start of the newest ordered epoch (the order of
  // the epoch after it does not exist yet, so this consumer's offset can
  // still shape it).
  const uint64_t epoch_start = static_cast<uint64_t>(order_.latest_epoch()) * options_.dataset_size;
  const uint64_t first_chunk_of_epoch =
      (epoch_start + options_.chunk_samples - 1) / options_.chunk_samples;
  const uint64_t start_chunk = std::min(assigned_, std::max(retained, first_chunk_of_epoch));

  Consumer c;
  c.record.id = next_id_++;
  c.record.pid = pid;
  c.record.name = name;
  c.record.batch_size = batch_size;
  c.record.joined_ms = now_ms;
  c.record.start = start_chunk * options_.chunk_samples;
  c.next = c.record.start;
  const int id = c.record.id;
  consumers_.emplace(id, std::move(c));
  collect();  // prefetched chunks before its start are no one's now
  return id;
}

void RingBroker::leave(int consumer, int64_t now_ms) {
  auto it = consumers_.find(consumer);
  if (it == consumers_.end() || it->second.record.left_ms >= 0) return;
  Consumer& c = it->second;
  if (c.pending) c.record.pending_ms += now_ms - c.pending_since;
  c.pending = false;
  c.held.clear();
  c.active = false;
  c.record.left_ms = now_ms;
  collect();
}

void RingBroker::release(int consumer, int count) {
  auto it = consumers_.find(consumer);
  if (it == consumers_.end() || it->second.record.left_ms >= 0) return;
  Consumer& c = it->second;
  for (int i = 0; i < count && !c.held.empty(); ++i) c.held.pop_front();
  collect();
}

void RingBroker::report_wait(int consumer, int64_t wait_ms) {
  auto it = consumers_.find(consumer);
  if (it != consumers_.end() && wait_ms >= 0) it->second.record.wait_ms = wait_ms;
}

void RingBroker::skip_epoch(int consumer) {
  auto it = consumers_.find(consumer);
  if (it == consumers_.end() || !it->second.active || it->second.record.left_ms >= 0) return;
  Consumer& c = it->second;
  const uint64_t n = options_.dataset_size;
  const uint64_t into = (c.next - c.record.start) % n;
  if (into != 0) c.next += n - into;
  collect();
}

void RingBroker::request(int consumer, int64_t now_ms) {
  auto it = consumers_.find(consumer);
  if (it == consumers_.end() || it->second.record.left_ms >= 0) return;
  Consumer& c = it->second;
  if (!c.active) {
    replies_.push_back({consumer, std::nullopt, c.record.detached});
    return;
  }
  if (!c.pending) {
    c.pending = true;
    c.pending_since = now_ms;
  }
  try_answer(c, now_ms);
}

uint32_t RingBroker::next_batch_count(const Consumer& c) const {
  const uint64_t n = options_.dataset_size;
  const uint64_t into = (c.next - c.record.start) % n;
  return static_cast<uint32_t>(std::min<uint64_t>(c.record.batch_size, n - into));
}

std::optional<BatchGrant> RingBroker::next_batch(const Consumer& c) const {
  const uint64_t n = options_.dataset_size;
  const uint64_t into = (c.next - c.record.start) % n;
  BatchGrant b;
  b.position = c.next;
  b.epoch = static_cast<int64_t>((c.next - c.record.start) / n);
  b.index = static_cast<int64_t>(into / c.record.batch_size);
  b.count = static_cast<uint32_t>(std::min<uint64_t>(c.record.batch_size, n - into));
  b.last = into + b.count == n;
  const uint64_t end = c.next + b.count;
  if (chunk_of(end - 1) >= published_) return std::nullopt;
  for (uint64_t p = c.next; p < end;) {
    const uint64_t chunk = chunk_of(p);
    const uint64_t chunk_end = (chunk + 1) * options_.chunk_samples;
    const uint64_t to = std::min(end, chunk_end);
    auto it = chunks_.find(chunk);
    assert(it != chunks_.end() && it->second.published);
    b.pieces.push_back({it->second.slot, static_cast<uint32_t>(p - chunk * options_.chunk_samples),
                        static_cast<uint32_t>(to - p)});
    p = to;
  }
  return b;
}

void RingBroker::try_answer(Consumer& c, int64_t now_ms) {
  if (!c.pending || !c.active) return;
  std::optional<BatchGrant> b = next_batch(c);
  if (!b) return;
  c.pending = false;
  c.record.pending_ms += now_ms - c.pending_since;
  c.held.push_back({b->position, b->position + b->count});
  c.next += b->count;
  c.record.samples += b->count;
  c.record.batches += 1;
  c.record.epochs += b->last ? 1 : 0;
  replies_.push_back({c.record.id, std::move(b), ""});
}

bool RingBroker::needed(uint64_t chunk) const {
  const uint64_t from = chunk * options_.chunk_samples;
  const uint64_t to = from + options_.chunk_samples;
  bool any_active = false;
  for (const auto& [id, c] : consumers_) {
    if (c.record.left_ms >= 0) continue;
    for (const Held& h : c.held)
      if (h.from < to && from < h.to) return true;
    if (c.active) {
      any_active = true;
      if (to > c.next) return true;
    }
  }
  if (any_active) return false;
  // No consumer: a prefetched chunk is kept for the next one if it could
  // start there (in the newest ordered epoch).
  return from >= static_cast<uint64_t>(order_.latest_epoch()) * options_.dataset_size;
}

void RingBroker::collect() {
  // Chunks at or after an active consumer's oldest unreleased position are
  // needed; only older ones (or all, with no active consumer) are checked.
  uint64_t bound = UINT64_MAX;
  for (const auto& [id, c] : consumers_)
    if (c.record.left_ms < 0 && c.active) bound = std::min(bound, chunk_of(c.released()));
  for (auto it = chunks_.begin(); it != chunks_.end() && it->first < bound;) {
    if (it->second.published && !needed(it->first)) {
      free_.push_back(it->second.slot);
      it = chunks_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<ChunkJob> RingBroker::next_job() {
  if (free_.empty()) return std::nullopt;
  const uint64_t n = options_.dataset_size;
  const uint64_t first = assigned_ * options_.chunk_samples;
  const uint64_t last = first + options_.chunk_samples - 1;
  const auto last_epoch = static_cast<int64_t>(last / n);
  if (active_consumers() == 0 && last_epoch > order_.latest_epoch()) return std::nullopt;
  while (last_epoch > order_.latest_epoch()) {
    std::vector<uint64_t> offsets;
    for (const auto& [id, c] : consumers_)
      if (c.record.left_ms < 0 && c.active) offsets.push_back(c.record.start % n);
    order_.advance(std::move(offsets));
  }
  ChunkJob job;
  job.chunk = assigned_++;
  job.slot = free_.back();
  free_.pop_back();
  job.first_position = first;
  job.samples.reserve(options_.chunk_samples);
  for (uint64_t p = first; p <= last; ++p) job.samples.push_back(order_.sample_at(p));
  chunks_[job.chunk] = Chunk{job.slot, false};
  ++stats_.chunks_assigned;
  return job;
}

void RingBroker::completed(uint64_t chunk, int64_t now_ms) {
  auto it = chunks_.find(chunk);
  if (it == chunks_.end() || it->second.published) return;
  it->second.published = true;
  ++stats_.chunks_published;
  done_out_of_order_.insert(chunk);
  while (!done_out_of_order_.empty() && *done_out_of_order_.begin() == published_) {
    done_out_of_order_.erase(done_out_of_order_.begin());
    ++published_;
  }
  for (auto& [id, c] : consumers_) try_answer(c, now_ms);
  collect();
}

bool RingBroker::starving(const Consumer& c) const {
  return c.record.left_ms < 0 && c.active && c.pending && !next_batch(c);
}

void RingBroker::tick(int64_t now_ms) {
  const int64_t dt = last_tick_ms_ < 0 ? 0 : std::max<int64_t>(0, now_ms - last_tick_ms_);
  last_tick_ms_ = now_ms;
  std::vector<Consumer*> active;
  int held_back = 0;  // waiting for a chunk no slot is free for
  int decoding = 0;   // waiting for a chunk being decoded (or about to be)
  uint64_t oldest = UINT64_MAX;
  for (auto& [id, c] : consumers_) {
    if (c.record.left_ms >= 0 || !c.active) continue;
    active.push_back(&c);
    oldest = std::min(oldest, chunk_of(c.released()));
    if (!starving(c)) continue;
    const uint64_t end = c.next + next_batch_count(c);
    if (free_.empty() && chunk_of(end - 1) >= assigned_) {
      ++held_back;
    } else {
      ++decoding;
    }
  }
  if (held_back > 0) stats_.starved_full_ms += dt;
  if (decoding > 0) stats_.starved_decoding_ms += dt;
  for (Consumer* c : active) {
    if (held_back > 0 && chunk_of(c->released()) == oldest && !starving(*c)) {
      c->blame_ms += dt;
      c->record.held_back_ms += dt;
    } else {
      c->blame_ms = std::max<int64_t>(0, c->blame_ms - dt);
    }
  }
  for (Consumer* c : active) {
    if (c->blame_ms < options_.lag_timeout_ms) continue;
    const uint64_t newest = published_ * options_.chunk_samples;
    detach(*c,
           fmt::format("detached by the shared data loader: it held back {} waiting consumer(s) "
                       "for a net {} (lag_timeout {}), {} samples behind the newest data. It "
                       "gets no more batches; the others go on. Give this job a dataset of its "
                       "own, or raise the loader's ring or lag_timeout",
                       held_back, format_duration_ms(c->blame_ms),
                       format_duration_ms(options_.lag_timeout_ms),
                       newest > c->next ? newest - c->next : 0),
           now_ms);
  }
  for (auto& [id, c] : consumers_) try_answer(c, now_ms);
}

void RingBroker::detach(Consumer& c, std::string reason, int64_t now_ms) {
  c.active = false;
  c.record.detached = std::move(reason);
  if (c.pending) {
    c.record.pending_ms += now_ms - c.pending_since;
    c.pending = false;
    replies_.push_back({c.record.id, std::nullopt, c.record.detached});
  }
  collect();
}

std::vector<BrokerReply> RingBroker::take_replies() {
  std::vector<BrokerReply> out;
  out.swap(replies_);
  return out;
}

std::vector<ConsumerRecord> RingBroker::consumers() const {
  std::vector<ConsumerRecord> out;
  for (const auto& [id, c] : consumers_) out.push_back(c.record);
  return out;
}

BrokerStats RingBroker::stats() const {
  BrokerStats s = stats_;
  s.epochs_ordered = order_.latest_epoch() + 1;
  return s;
}

}  // namespace colo
