// ClassQueue: the `auto` policy's queued jobs (AutoScheduler), kept per class
// (signature) so that one scheduling event costs about the number of
// classes, not the queue's length. JobQueue (job_queue.h) is the fixed
// policies' queue; both report why a job waits through WaitingReason.
//
// Invariants: within a class, jobs are first in, first out, in seq order;
// every non-empty class is in heads() under the seq of its first job, and
// changes() counts every change to heads(). Retries (requeued after running
// out of memory, or a speculative start stopped) go before every class, in
// the order they came. in_family() counts the jobs of the classes (not the
// retries) by QueuedJob::family, and classes_in_family() names the classes
// holding a job of a family (without a walk of every class). A class's node never moves (heads()
// and Head point into it); an emptied class stays until take_class() or drain().
//
// Order. heads_to_try() gives the classes an event tries: with a `first`
// predicate, the classes it is true for go first (the caller's: a dataset
// being read already); then a higher priority, then the owner who used least
// (set_usage(): fair share); then arrival. With queue_depth > 0 and more
// classes than queue_depth + backfill_depth, only the first queue_depth in
// that order are tried, then a backfill window of backfill_depth more taken
// by seq from where the last walk()'s window stopped, wrapping round, so
// that every class is tried within (classes - queue_depth) / backfill_depth
// events (Slurm's default_queue_depth and bf_max_job_test). A bounded
// listing in arrival order (no `first`, priority or usage) is kept with the
// changes() and backfill_from() it was made at: the next call at the same
// two (an event's walk after the last event's heads_to_try()) copies it
// instead of listing the heads out of the map again.
//
// Pure and deterministic; not thread-safe; not copyable (heads point into
// its nodes), movable (map nodes keep their addresses).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jobs/job_qos.h"
#include "sched/signature_knowledge.h"

namespace colo {

// A queued job as the `auto` policy keeps it (it keeps the same record
// while the job runs, and requeues it as it was).
struct QueuedJob {
  // The policy's caches, reset by whoever changes a field below; first and
  // together (64 bytes), as an event's walk reads them of every class it
  // tries and of most of these nothing else. Its likeness as a
  // hash, computed while the policy's knowledge was `knowledge` (0: never),
  // and the start-up of the profile it was computed from (0 without one),
  // which is its usable profile's as long as that knowledge holds. A
  // likeness computed from a usable profile also keeps that profile's stamp
  // (SignatureKnowledge::usable_stamp(); 0 for one computed without) and
  // how many bad combinations there were: while both are the same, so is
  // the likeness, whatever else the knowledge learned.
  struct Alike {
    uint64_t knowledge = 0;
    uint64_t hash = 0;
    int64_t startup = 0;
    uint64_t usable = 0;
    size_t bad = 0;
  };
  mutable Alike alike;
  mutable SignatureKnowledge::Lookups lookups;  // SignatureKnowledge::usable()
  size_t job = 0;
  std::string signature;
  uint64_t seq = 0;    // arrival order, set by ClassQueue::push
  uint32_t owner = 0;  // SchedJob's
  int priority = 0;    // opportunistic: below every normal job's (AutoScheduler::enqueue)
  int attempt = 1;
  QosClass qos = QosClass::kNormal;         // SchedJob's
  double min_speed = kDefaultMinSpeed;      // SchedJob's
  std::optional<uint64_t> memory_estimate;  // overrides the profile's after an OOM
  bool alone = false;                       // after OOMs: a whole GPU (AutoScheduler::finished)
  // Protected, and no solo rate of its own when queued: it runs alone until
  // AutoScheduler::learned() gives it one (its floor is judged against it).
  bool solo_unknown = false;
  // Keeps its GPU to itself, for either reason above.
  bool keeps_gpu() const { return alone || solo_unknown; }
  // Its family as it joined its class (counted in in_family()), else "".
  std::string family;
  // Overran its limit as a speculative sibling: waits for its family's measurement.
  bool after_measurement = false;
};

class ClassQueue {
 public:
  using Classes = std::map<std::string, std::deque<QueuedJob>>;
  using Class = Classes::value_type;         // (signature, its jobs oldest first)
  using Head = std::pair<uint64_t, Class*>;  // a class by the seq of its first job
  using Heads = std::pmr::map<uint64_t, Class*>;

  // queue_depth 0: every class is tried at every event.
  ClassQueue(size_t queue_depth, size_t backfill_depth)
      : queue_depth_(queue_depth), backfill_depth_(backfill_depth) {}
  ClassQueue(const ClassQueue&) = delete;
  ClassQueue& operator=(const ClassQueue&) = delete;
  ClassQueue(ClassQueue&&) = default;
  ClassQueue& operator=(ClassQueue&&) = delete;  // heads_ would free into the pool it replaced

  // A new job at the back of its class, with the next seq.
  void push(QueuedJob job);
  // A requeued job (its seq kept), after the retries already queued.
  void push_retry(QueuedJob job);
  // Offers each retry, in order, to `start`; those it started leave the queue.
  void start_retries(const std::function<bool(const QueuedJob&)>& start);
  // The first job of `cls` started: it leaves the queue, and the class is
  // known by its next job's seq (or leaves heads() when emptied).
  void pop_head(Class& cls);
  // Removes `signature`'s class and returns its jobs (empty when none).
  std::deque<QueuedJob> take_class(const std::string& signature);
  // Removes every job, and returns them by seq.
  std::vector<size_t> drain();
  // Removes one queued job; false when it is not queued.
  bool remove(size_t job);

  // Fair share: each owner's usage (heads_to_try()).
  void set_usage(const std::map<uint32_t, double>& usage) { usage_ = usage; }

  // The classes the next event tries (see Order above). walk() moves the
  // backfill window on; heads_to_try() leaves it.
  std::vector<Head> heads_to_try(const std::function<bool(const std::string&)>& first) const {
    std::vector<Head> heads;
    order(first, nullptr, heads);
    return heads;
  }
  std::vector<Head> walk(const std::function<bool(const std::string&)>& first) {
    std::vector<Head> heads;
    order(first, &backfill_from_, heads);
    return heads;
  }
  // The same into `heads` (emptied first): a caller that keeps one vector
  // from event to event allocates none.
  void heads_to_try(const std::function<bool(const std::string&)>& first,
                    std::vector<Head>& heads) const {
    order(first, nullptr, heads);
  }
  void walk(const std::function<bool(const std::string&)>& first, std::vector<Head>& heads) {
    order(first, &backfill_from_, heads);
  }
  // Whether an event tries only some of the classes (see Order above).
  bool walk_is_bounded() const {
    return queue_depth_ > 0 && heads_.size() > queue_depth_ + backfill_depth_;
  }

  // Jobs queued: the classes' and the retries.
  size_t size() const { return size_; }
  size_t in_class(const std::string& signature) const;
  size_t in_family(const std::string& family) const;
  // The signatures of the classes holding at least one job of `family` (by
  // QueuedJob::family), in no particular order; pointers into the queue,
  // valid until it next changes.
  std::vector<const std::string*> classes_in_family(const std::string& family) const;
  // The non-empty classes by the seq of their first job.
  const Heads& heads() const { return heads_; }
  uint64_t changes() const { return changes_; }
  // Where the next backfill window starts: a seq.
  uint64_t backfill_from() const { return backfill_from_; }

 private:
  void order(const std::function<bool(const std::string&)>& first, uint64_t* backfill_next,
             std::vector<Head>& heads) const;
  // Takes a job leaving `cls` off in_family() and classes_in_family().
  void uncount(const QueuedJob& job, const Class& cls);

  size_t queue_depth_ = 0;
  size_t backfill_depth_ = 0;
  Classes classes_;
  // heads_'s nodes in a pool of their own (declared first: it outlives
  // them), so that an event's walk in arrival order reads 10,000 classes'
  // nodes from a few hundred kilobytes, not from nodes strewn among every
  // job's records. On the heap: a moved queue's map keeps its allocator.
  std::unique_ptr<std::pmr::unsynchronized_pool_resource> heads_pool_ =
      std::make_unique<std::pmr::unsynchronized_pool_resource>();
  Heads heads_{heads_pool_.get()};
  uint64_t changes_ = 0;
  // order()'s last bounded listing in arrival order, and where the window
  // after it starts, made while changes_ and backfill_from_ were these.
  struct Listing {
    uint64_t changes = UINT64_MAX;
    uint64_t from = 0;
    uint64_t next = 0;
    std::vector<Head> heads;
  };
  mutable Listing listing_;
  uint64_t backfill_from_ = 0;
  std::deque<QueuedJob> retries_;
  // Jobs in classes_ by family, and by class within it: a sweep's thousands
  // of signatures counted, and its queued ones found, without a walk of them.
  struct FamilyCount {
    size_t jobs = 0;
    std::unordered_map<const Class*, size_t> classes;  // jobs of the family in each
  };
  std::unordered_map<std::string, FamilyCount> in_family_;
  std::map<uint32_t, double> usage_;
  bool prioritised_ = false;  // a job with a priority came
  uint64_t next_seq_ = 0;
  size_t size_ = 0;
};

}  // namespace colo
