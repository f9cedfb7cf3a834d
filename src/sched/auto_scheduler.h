// AutoScheduler: the `auto` policy. It applies the paper's collocation
// guidelines instead of a fixed degree chosen by hand:
//
// Admission. A job joins a GPU only if the GPU's summed memory claims (each
//   job's peak estimate plus a margin) fit its memory less a reserve, the
//   summed solo SM activity stays under a cap, and the interference model
//   predicts that the GPU's work (below) rises, or stays within
//   `saturated_loss` of the best it predicts for these jobs. Under MPS the
//   measured work stays level once the GPU is full, so a job joining
//   then costs the others little and its start-up (when it does not load
//   the GPU) overlaps their work instead of leaving the GPU idle later.
//   Under naive sharing time slicing loses at once with busy jobs, so they
//   run one at a time. A job alone on an empty GPU always fits if its memory
//   does. Each job gets its claim as a memory limit (MPS pinned memory), so
//   one that outgrows its estimate fails alone.
// Profiles. Jobs of one signature share a profile (profile.h). A job whose
//   profile is not known enough for admission takes what its family's
//   measured instances say (family.h: a sibling's measurement, or a fit with
//   an uncertainty that widens its memory claim). Measurements of ended jobs
//   (measured()) join the family.
// Cold start. A job with neither is a newcomer: it starts at once where its
//   prior (prior.h: a same-model or cross-model estimate from the store, else
//   a conservative default) says it fits, beside running work, and is
//   measured there (learned()) until its memory plateaus; the others of its
//   family do not wait for that: while it is measured they start beside it
//   (or beside other work on another GPU),
//   speculatively (their start-ups overlap its measurement), each with an
//   equal share of what the GPU can spare beside it as its memory limit (half
//   of it at most; at least `speculative_floor_bytes` and what the newcomer
//   holds so far, so none starts under a limit it is sure to overrun, and
//   none starts where that much is not spare), without the
//   SM cap and the model's verdict, which its measurement then gives. When
//   the newcomer's memory (observe_memory()) passes a speculative start's
//   limit, that start cannot fit: it is stopped at once (take_stops()) and
//   waits for the measurement, not counted as an attempt; one that overruns
//   its share waits for it too (a GPU with nothing running takes another
//   instance of the family rather than idle).
//   Contained: under MPS its memory limit, which is also its claim while it
//   is measured, is what the GPU can spare (its memory less the reserve and
//   the running jobs' claims): all of it when nothing else waits, else half
//   (at least its prior's claim), so that newcomers of other families start
//   up beside it; an overrun fails the newcomer alone, which is retried with
//   what it took (all the GPU can spare then). Under naive sharing, where no
//   limit exists, its prior's claim must fit with `naive_headroom` to spare.
//   When its measurement arrives, the rates of the jobs that were there
//   before it (and no other newcomer) are compared with theirs before: a
//   fall more than `newcomer_tolerance` below what the interference model
//   predicts holds the GPU (no more jobs until one ends) and the combination
//   is never formed again. When a family has measured instances that cannot
//   speak for every queued one (a parameter that matters has one measured
//   value), the queued instance that would teach most (family.h,
//   probe_value) is the newcomer, so that later estimates interpolate.
// Early starts. Start-up (imports, data loading) does not load the GPU, so
//   when a GPU is full, the next job may start up to its profile's start-up
//   time before a running job is expected to end (expected from the solo
//   time and the rates observed), if it would be admitted in that job's
//   place: its start-up overlaps the others' work.
// Work. Progress is compared as work: each job's rate over its solo rate
//   (its normalized progress), weighted by its solo load (SM activity under
//   MPS), summed. For jobs of one kind this orders combinations as the plain
//   summed normalized progress does; unlike it, a heavy job joining light
//   ones is not counted as a loss merely because it is heavy.
// Placement. Among the GPUs that admit a job, the one where the interference
//   model predicts the largest gain in work wins (an empty GPU first, then
//   the least loaded), then the tightest memory fit.
// Owners. Where jobs of different owners take turns on a GPU
//   (owners_time_slice: MPS with a daemon per user), a GPU whose jobs would
//   have two or more owners is modelled as naive sharing (time sliced), so
//   busy jobs of different users are kept on separate GPUs where they can
//   be, and share one only where the model says time slicing gains; a
//   speculative start (which skips the model) never joins another owner's
//   jobs. Otherwise owners do not matter to placement.
// Feedback. A change to a GPU's set of jobs that was not seen before is
//   judged `settle_ms` after the GPU's last change, from measured rates (the
//   GPU keeps taking jobs meanwhile: short jobs are not serialised): if the measured work fell
//   more than `tolerance` below what the GPU did before the change (from at
//   most one job: below its heaviest job alone), the combination is
//   remembered as bad, and the GPU takes no more jobs until one ends; a bad
//   combination (or any superset) is never formed again. Freed capacity is
//   refilled at once.
// Shared data. Jobs that read one dataset through a shared loader
//   (docs/data-sharing.md) cost the host its decoding once, however many run
//   at once: queued jobs whose dataset is being read already are placed
//   first, and, when host limits are given, a job whose dataset has no
//   running reader yet is admitted only if its loader's threads and ring
//   still fit the host's CPUs and memory (a job on an idle host always is).
// Reservation. Fair share, priorities and arrival order the queue, and a job
//   that fits is placed whatever its rank. So that the first job in that
//   order that cannot start for want of room (the head; not one waiting for
//   its family's measurement or for the host) is not overtaken for ever by
//   later jobs refilling each place that frees, it is kept the GPU where it
//   is expected to fit first: there, its jobs in the order they are expected
//   to end (those with an expected end first, then the oldest), the fewest
//   that must end for the head to be admitted; among GPUs, a known expected
//   start before an unknown one, then the soonest, then the fewest jobs to
//   end, then the first GPU. A later job starts there only if it is
//   expected to end before the head's start (ends_by()), or if the head
//   would still be admitted there once those jobs ended, with it beside
//   (Slurm's backfill rule): without expected ends, the place that frees
//   waits for the head. Found again at each schedule(); gangs are placed
//   before it (GangScheduler).
// Classes. Before any other check, qos_join() (qos_placement.h) says whether
//   a job's class may join a GPU's (a protected job only beside
//   opportunistic ones, as many as its floor allows, judged by its solo SM
//   activity as known, else its prior's), and the levers an opportunistic
//   one starts with (Decision::opportunistic). Opportunistic jobs go after
//   every other in the queue's order (below any priority; but jobs of one
//   signature stay first in, first out whatever their classes), and fill
//   any GPU with room. An early start is judged with the job it replaces
//   still there (beside a protected job it would be one neighbour too many
//   until that one ends). A job every GPU's classes refuse says why it waits
//   (waiting_reason(): kProtected). Without a protected or opportunistic
//   job in the queue nothing of this is looked at.
// Retries. A job that ends out of memory is requeued ahead of the queue with
//   twice the memory estimate, alone with a whole GPU on its last attempt; after
//   `max_retries` it ends failed. No job is dropped silently.
//
// Queued jobs are kept per signature, so one scheduling event costs about
// (signatures x GPUs x jobs per GPU), not the queue's length: 100,000 queued
// jobs are cheap. Not thread-safe.
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "sched/class_queue.h"
#include "sched/family.h"
#include "sched/host_budget.h"
#include "sched/interference.h"
#include "sched/qos_placement.h"
#include "sched/scheduler.h"
#include "sched/signature_knowledge.h"

namespace colo {

struct AutoOptions {
  ShareMode mode = ShareMode::kSpatial;  // the mechanism's way of sharing
  // Jobs of different owners on one GPU take turns (Mechanism::
  // users_time_slice(): MPS with a daemon per user): a GPU whose jobs
  // (with the one joining) have two or more owners is modelled as time
  // sliced, the whole set, so a busy job of another user is not admitted
  // beside them where an empty GPU or one of its owner's would do.
  bool owners_time_slice = false;
  // The mechanism's lever over an opportunistic client (qos_placement.h).
  QosShare qos_share = QosShare::kPriority;
  int max_jobs_per_gpu = 48;     // the mechanism's limit (MPS clients)
  double sm_cap_pct = 400.0;     // summed solo SM activity per GPU
  double saturated_loss = 0.05;  // predicted work below the peak a joining job may cost
  double memory_margin = 0.2;    // added to each peak estimate
  uint64_t memory_headroom_bytes = 512ull << 20;  // and this, per job
  uint64_t memory_reserve_bytes = 1ull << 30;     // kept free on every GPU
  int max_retries = 2;                            // out-of-memory retries per job
  int64_t settle_ms = 20'000;                     // a new combination is judged after this
  double tolerance = 0.05;                        // smaller drops are noise
  bool memory_limits = true;                      // give jobs memory limits (MPS)
  // Naive sharing: a newcomer's claim must leave this much of the GPU free
  // (the larger of the two), as no limit contains it.
  uint64_t naive_headroom_bytes = 2ull << 30;
  double naive_headroom_fraction = 0.1;
  // A newcomer whose neighbours slow down this much more than predicted holds its GPU.
  double newcomer_tolerance = 0.1;
  // A speculative sibling's memory limit is at least this.
  uint64_t speculative_floor_bytes = 1ull << 30;
  // Queued classes tried per event (Slurm's default_queue_depth and
  // bf_max_job_test): the first `queue_depth` in order, then a backfill
  // window of `backfill_depth` more, each event's from where the last one's
  // stopped, so that every class is tried within (classes - queue_depth) /
  // backfill_depth events. 0: every class, every event.
  size_t queue_depth = 1000;
  size_t backfill_depth = 1000;
  double host_cpus = 0;            // CPU cores for shared loaders; 0: not checked
  uint64_t host_memory_bytes = 0;  // host memory for their rings; 0: not checked
};

struct GpuSlot {
  int device = 0;
  uint64_t memory_total_bytes = 0;
};

class AutoScheduler final : public Scheduler {
 public:
  AutoScheduler(const std::vector<GpuSlot>& gpus, AutoOptions options, InterferenceModel model);
  // Queued jobs keep pointers into its profiles (QueuedJob::lookups) and its
  // queue into its classes: not copied; a move keeps the nodes of their
  // maps, and so the pointers.
  AutoScheduler(const AutoScheduler&) = delete;
  AutoScheduler& operator=(const AutoScheduler&) = delete;
  AutoScheduler(AutoScheduler&&) = default;
  AutoScheduler& operator=(AutoScheduler&&) = default;

  // Calls the setters below with what `facts` holds (a profile only when the
  // signature has none yet).
  void introduce(const std::string& signature, const SignatureFacts& facts) override;
  void expect_signatures(size_t count) override { knowledge_.reserve(count); }

  // What is known about a signature before the run (store, hints). Call
  // before enqueueing its jobs.
  void set_profile(const std::string& signature, const JobProfile& profile) {
    knowledge_.set_profile(signature, profile);
  }
  // What is assumed about a signature when nothing better is known (prior.h).
  void set_prior(const std::string& signature, const JobProfile& prior) {
    knowledge_.set_prior(signature, prior);
  }
  const JobProfile* profile(const std::string& signature) const {
    return knowledge_.own(signature);
  }
  // A short name for a signature's jobs in notes ("resnet26").
  void set_label(const std::string& signature, std::string label) {
    knowledge_.set_label(signature, std::move(label));
  }
  // The shared loader the signature's jobs read through (Shared data, above).
  void set_host_cost(const std::string& signature, HostCost cost) {
    host_.set_cost(signature, std::move(cost));
  }
  // The signature's family; call before enqueueing its jobs. Signatures
  // without one are families of their own.
  void set_family(const std::string& signature, FamilyMember member) {
    // Jobs queued before their family was known are not found by family.
    if (queue_.in_class(signature) > 0) knowledge_.mark_unlisted_queued();
    knowledge_.set_family(signature, std::move(member));
  }
  // An instance of `family` measured before the run (the store's profiles).
  void add_family_instance(const std::string& family, FamilyInstance instance) {
    knowledge_.add_family_instance(family, std::move(instance));
  }
  // What admission uses for `signature`: its own profile when complete
  // enough, else that profile over its family's estimate; nullptr when
  // neither is enough (a probe is needed).
  const JobProfile* usable_profile(const std::string& signature) const {
    return knowledge_.usable(signature);
  }

  std::string describe() const override;
  void enqueue(const SchedJob& job) override;
  std::vector<Decision> schedule(int64_t now_ms) override;
  EndVerdict finished(size_t job, JobEnd end, int64_t now_ms) override;
  void observe_rate(size_t job, double samples_per_s, int64_t now_ms) override;
  void observe_memory(size_t job, uint64_t bytes, int64_t now_ms) override;
  std::vector<Unplaceable> take_stops() override;
  void learned(const std::string& signature, const JobProfile& profile, int64_t now_ms) override;
  void measured(size_t job, const JobProfile& profile) override;
  // Remembered as a bad combination (and so any superset): never formed again.
  void avoid_together(const std::vector<std::string>& signatures) override;
  std::vector<size_t> drain_queued() override;
  bool remove_queued(size_t job) override;
  // expected_end() when the job's profile has a solo time. Else, when its
  // solo rate is known: from the work of the latest job of its signature (or
  // else of its family) that ended ok here, in samples, at its own solo rate.
  // For what it reports only: placements use solo times alone.
  std::optional<int64_t> expected_end_ms(size_t job, int64_t now_ms) const override;
  std::vector<Unplaceable> take_unplaceable() override;
  std::vector<std::string> take_notes() override;
  size_t queued() const override { return queue_.size(); }
  std::optional<int64_t> next_wakeup_ms(int64_t now_ms) const override;
  // next_wakeup_ms(), and when a GPU's newcomer check or combination is due
  // to be judged (settle_ms after its change, 3 x settle_ms at the latest).
  std::optional<int64_t> next_check_ms(int64_t now_ms) const override;
  void set_usage(const std::map<uint32_t, double>& usage) override { queue_.set_usage(usage); }
  // A gang's rank runs as a job of the signature "gang" with the load given
  // (its SM activity) and its memory as its claim; a reserved GPU takes a
  // job only if it would end by `until_ms` even with an equal share of the
  // GPU among all its jobs (its solo time x their number).
  std::vector<DeviceRoom> rooms(int64_t now_ms) override;
  void occupy(size_t key, int device, uint64_t memory_bytes, double sm_active_pct) override;
  void vacate(size_t key, int64_t now_ms) override;
  void reserve(const std::vector<int>& devices, std::optional<int64_t> until_ms) override;
  // The head of the queue (kReserved), or any other queued job while a GPU
  // is kept for the head (kBackfill).
  std::optional<WaitingReason> waiting_reason(size_t job) const override;

  // Combinations found bad so far, as "label x count + ..." (for reports).
  std::vector<std::string> bad_combinations() const;

  // The longest start-up among the usable profiles of the classes the next
  // event tries (what next_wakeup_ms() reads), cached (see
  // longest_startup_); longest_queued_startup_afresh() computes it with no
  // cache, listing and looking up every such class (for tests: the two
  // agree whatever happened since).
  int64_t longest_queued_startup() const;
  int64_t longest_queued_startup_afresh() const;

 private:
  using Combination = std::map<std::string, int>;  // signature -> jobs
  using Waiting = QueuedJob;
  struct Running {
    Waiting waiting;
    int gpu = 0;  // index into gpus_
    uint64_t claim = 0;
    SoloLoad load;
    bool probe = false;
    double rate = 0;
    int64_t rate_ms = -1;  // when `rate` was observed; -1: never
    int64_t started_ms = 0;
    double work_done_ms = 0;     // solo milliseconds of GPU work done, from observed rates
    int64_t integrated_ms = -1;  // work_done_ms counts up to here
    bool departing = false;      // a job already started early to take its place
    // Started beside its family's newcomer before that was measured (its
    // start-up overlaps the measurement); placed by the family's measurement
    // once it arrives.
    bool speculative = false;
    // A speculative start whose limit its family's newcomer outgrew: asked
    // to stop (take_stops()).
    bool doomed = false;
    // Opportunistic: the thread percentage it started with (100: uncapped).
    int thread_pct = 100;
    // A newcomer whose first measurement had no SM activity: its load is a
    // placeholder (100%) until a later one (learned()) has it.
    bool load_unknown = false;
  };
  struct Gpu {
    GpuSlot slot;
    std::vector<size_t> jobs;
    Combination combination;
    uint64_t claimed = 0;
    double sm_sum = 0;
    int measuring = 0;                  // newcomers being measured here
    std::map<std::string, int> scouts;  // by probe_key(): those of them
    bool alone = false;                 // a job that must run alone runs here
    bool held = false;                  // a change lowered progress: no more jobs until one ends
    bool judging = false;               // a new combination awaits its verdict
    int64_t changed_ms = -1;
    std::optional<double> reference;  // measured_work() before the change
    bool reference_alone = false;     // ... which had at most one job
    uint64_t version = 0;             // bumped by every change to its jobs, their loads or rates
    struct {
      int64_t at_ms = -1;
      uint64_t version = 0;
      std::optional<int64_t> end;
      size_t job = 0;
    } first_end;  // first_to_end()'s answer for (at_ms, version)
    // The newcomer's neighbours: their rates before it started, and after its
    // measurement arrived (from_ms), against what the model predicted.
    struct NeighbourCheck {
      size_t newcomer = 0;
      std::map<size_t, double> before;
      std::map<size_t, double> after;
      double predicted = 1.0;  // their rate after over before, by the model
      int64_t from_ms = -1;    // -1: the newcomer is still being measured
    };
    std::optional<NeighbourCheck> check;
  };

  // usable_profile(w.signature), without looking the signature up
  // (QueuedJob::lookups): placements and the queue's walks ask it of every
  // queued class, and a sweep's signatures are long and many.
  const JobProfile* usable_profile(const Waiting& w) const;
  bool place(const Waiting& w, int64_t now_ms, std::vector<Decision>& out);
  // Whether `w` may start on `g` now: `g` is not kept for a gang, or `w`
  // would end before the gang could start there (reserve()).
  bool may_start(const Gpu& g, const Waiting& w, int64_t now_ms) const;
  // Whether `w` would end by `until_ms` on `g` even with an equal share of
  // the GPU among all its jobs (its solo time x their number); false without
  // a solo time.
  bool ends_by(const Gpu& g, const Waiting& w, int64_t until_ms, int64_t now_ms) const;
  // What admission_gain() judges a GPU as: as it is; with `leaving` replaced
  // by an early start (it holds its memory until it ends); or as it will be
  // once `ended` (some of its jobs) have ended and `joining` (not one of
  // them) has started there.
  struct AsIf {
    std::optional<size_t> leaving;
    std::span<const size_t> ended;
    const Running* joining = nullptr;
  };
  // The gain in predicted summed progress if `w` joins `g` (as `as_if` has
  // it), or nullopt when admission refuses it.
  std::optional<double> admission_gain(const Gpu& g, const Waiting& w, const SoloLoad& load,
                                       uint64_t claim, const AsIf& as_if) const;
  std::optional<double> admission_gain(const Gpu& g, const Waiting& w, const SoloLoad& load,
                                       uint64_t claim) const {
    return admission_gain(g, w, load, claim, AsIf{});
  }
  // A job's claim on `g`, where `empty` says whether it would be alone
  // there: placed by a profile (`claim`: claim_for() its estimate), or a
  // newcomer (`need`: claim_for() its prior's or last attempt's peak).
  uint64_t placed_claim(const Gpu& g, uint64_t claim, bool empty) const;
  uint64_t newcomer_claim(const Gpu& g, uint64_t need, bool empty) const;
  // qos_join() of `w` (with `load`) on `g` as `as_if` has it (its ended
  // jobs count as gone, `joining` as there; a job an early start replaces
  // still counts: it runs until it ends).
  QosJoin qos_join_on(const Gpu& g, const Waiting& w, const SoloLoad& load,
                      const AsIf& as_if) const;
  // Whether place() would admit `w` on `g` as `as_if` has it.
  bool admits(const Gpu& g, const Waiting& w, const AsIf& as_if) const;

  // The head of the queue and the GPU kept for it (Reservation, in the class comment).
  struct Reservation {
    Waiting head;
    size_t gpu = 0;                   // index into gpus_
    std::vector<size_t> ending;       // the jobs there that must end before it fits
    bool ends_known = false;          // ... each expected to end
    std::optional<int64_t> start_ms;  // when they are all expected to have ended
  };
  // Whether room is all that `w` waits for (not its family's measurement,
  // nor the host's CPUs and memory): only such a job is kept a GPU.
  bool waits_for_room(const Waiting& w);
  // The GPU where the head `w` is expected to fit first, and what must end
  // there; nullopt when it fits none however many jobs end.
  std::optional<Reservation> reservation_for(const Waiting& w, int64_t now_ms) const;
  // The head's reservation (head_of_queue_), found when first asked for: by a later
  // job that would start (backfills()) or by waiting_reason(); nullptr
  // without a head or where it fits no GPU.
  const Reservation* reservation() const;
  // `w` could not be placed in this schedule(): the first such job that
  // waits for room is the head. note_failed() calls it only where it has
  // something to do (the classes are looked at, or no head was found yet):
  // the walk's thousands of failing classes an event cost no call.
  void failed(const Waiting& w, int64_t now_ms);
  void note_failed(const Waiting& w, int64_t now_ms) {
    if (classes_.any || !head_of_queue_.sought) failed(w, now_ms);
  }
  void forget_head();
  // Whether `w`, with `load` and `claim`, may start on `g` beside the
  // reservation: `g` is not the head's GPU, `w` is the head, `w` ends before
  // the head's expected start (ends_by()), or the head still fits there
  // once its `ending` ended, with `w` there too.
  bool backfills(const Gpu& g, const Waiting& w, const SoloLoad& load, uint64_t claim,
                 int64_t now_ms) const;
  // When a running job is expected to end, from its profile's solo time and
  // the rates observed so far (before any: `gpu_rate`, predicted_rate() of
  // its GPU, passed in so that a GPU's jobs share one model evaluation);
  // nullopt without a solo time.
  std::optional<int64_t> expected_end(const Running& r, double gpu_rate, int64_t now_ms) const;
  // The same with `p` as its profile (it has a solo time).
  std::optional<int64_t> expected_end_by(const Running& r, const JobProfile& p, double gpu_rate,
                                         int64_t now_ms) const;
  // The job on `g` (not departing) expected to end first, and when; nullopt
  // when none has an expected end. Cached until `g` changes or time moves:
  // a wave of placements asks it of every full GPU for every job.
  std::optional<std::pair<int64_t, size_t>> first_to_end(Gpu& g, int64_t now_ms);
  // The model's rate (over solo) of the slowest of the GPU's current jobs.
  double predicted_rate(const Gpu& gpu) const;
  // How the jobs of a GPU share it: options_.mode, or time slicing where
  // owners take turns (owners_time_slice) and they have `several_owners`.
  ShareMode mode_of(bool several_owners) const {
    return options_.owners_time_slice && several_owners ? ShareMode::kTimeSliced : options_.mode;
  }
  // Whether the jobs on `g` (gang ranks are no one's), with a job of
  // `joining` owner when given, belong to two or more owners.
  bool several_owners(const Gpu& g, std::optional<uint32_t> joining = std::nullopt) const;
  ShareMode mode_of(const Gpu& g) const { return mode_of(several_owners(g)); }
  // InterferenceModel::work() and peak_work() with `mode`'s rates, each job
  // weighed as options_.mode weighs it (its solo SM activity under MPS), so
  // that the work of GPUs shared in either way compares.
  double work_of(ShareMode mode, std::span<const SoloLoad> jobs) const;
  double peak_work_of(ShareMode mode, std::span<const SoloLoad> jobs) const;
  // Cold start (see the class comment): `w` has no usable profile.
  bool place_newcomer(const Waiting& w, int64_t now_ms, std::vector<Decision>& out);
  // A sibling of a newcomer being measured starts beside it (see the class comment).
  bool place_speculative(const Waiting& w, const std::string& key, const JobProfile& prior,
                         int64_t now_ms, std::vector<Decision>& out);
  // Queued jobs whose probe_key() is `key`.
  size_t queued_with_key(const std::string& key) const;
  // Judges a newcomer's neighbours once their rates after it are in.
  void check_neighbours(Gpu& g, int64_t now_ms);
  void add(Gpu& gpu, Running r, int64_t now_ms, std::vector<Decision>& out,
           std::optional<JobProfile> estimate = std::nullopt);
  uint64_t estimate(const Waiting& w) const;
  // The memory claimed for a peak estimate: plus the margin, the estimate's
  // relative uncertainty and the headroom.
  uint64_t claim_for(uint64_t estimate, double uncertainty = 0) const;
  // The queued instance of `family` to measure next
  // (SignatureKnowledge::probe_target over the queued classes).
  std::string probe_target(const std::string& family);
  // Its family member's name ("toy[lr=0.1]"), else its label.
  std::string name_of(const std::string& signature) const;
  // A GPU's memory less the reserve kept free on it; 0 when it has no more
  // than the reserve.
  uint64_t usable_memory(const Gpu& g) const;
  std::optional<double> measured_work(const Gpu& gpu, int64_t fresh_since_ms) const;
  std::vector<SoloLoad> loads(const Gpu& gpu) const;
  void judge(int64_t now_ms);
  std::string describe(const Combination& c) const;
  uint64_t largest_memory() const;
  // schedule()'s walk of the queued classes (heads_to_try()), each tried
  // once from its head. It stops once no GPU takes another job: then no
  // class can start.
  void place_heads(int64_t now_ms, std::vector<Decision>& out);
  // Whether a GPU takes another job: one is below max_jobs_per_gpu, not held
  // for a gang and not running a job alone. When none does, admission_gain()
  // refuses every class, and a walk of thousands of them would only find that.
  bool some_gpu_takes_another() const;
  // Shared data: whether a job of `signature` fits the host's loader budget.
  bool host_fits(const std::string& signature) const;
  // The classes the next event tries (ClassQueue::heads_to_try), datasets
  // being read first; walk_heads() moves the backfill window on. Each
  // answers in a vector of its own kept from event to event (heads_), valid
  // until its next call: thousands of classes, no allocation per event.
  const std::vector<ClassQueue::Head>& heads_to_try() const;
  const std::vector<ClassQueue::Head>& walk_heads();
  struct HeadLists {
    std::vector<ClassQueue::Head> to_try;
    std::vector<ClassQueue::Head> walked;
  };
  mutable HeadLists heads_;
  // admission_gain()'s loads, kept for their capacity (no allocation per call).
  mutable std::vector<SoloLoad> loads_scratch_;

  // Combinations judged: a bad one (and any superset) is never formed
  // again; a good one is not judged again.
  struct Verdicts {
    std::vector<Combination> bad;
    std::set<Combination> good;
    bool is_bad(const Combination& c) const;
  };

  std::vector<Gpu> gpus_;
  AutoOptions options_;
  InterferenceModel model_;
  SignatureKnowledge knowledge_;
  ClassQueue queue_;
  LoaderHostBudget host_;
  // The longest start-up among the profiles of the classes the next event
  // tries (heads_to_try()), as computed while knowledge_.version(), the
  // queue's changes() and backfill_from() were these (next_wakeup_ms() is asked at every step of a
  // run, and the classes may be tens of thousands).
  struct LongestStartup {
    uint64_t knowledge = 0;
    uint64_t heads_changes = 0;
    uint64_t backfill_from = 0;
    int64_t startup_ms = 0;
  };
  mutable LongestStartup longest_startup_;
  struct Probing {
    int newcomers = 0;         // being measured
    uint64_t memory_seen = 0;  // the most any of them held (observe_memory())
  };
  std::map<std::string, Probing> probing_;  // by probe_key()
  // In one schedule() call, the likenesses of the jobs that could not be
  // placed since the last placement (add() clears them). A job's likeness is
  // all that its placement reads besides the GPUs' state: a job alike one
  // that could not be placed cannot be either while no GPU changed, so it is
  // not tried (the points of a sweep share one). Kept as 64-bit hashes of
  // its fields (LikenessHash; a collision of two among the queued likenesses
  // is what it would take to skip a job wrongly).
  // The last likeness inserted is kept apart too: consecutive classes of a
  // sweep are mostly alike, and comparing with it spares hashing.
  struct FailedAlike {
    std::unordered_set<uint64_t> all;
    std::optional<uint64_t> last;
    void insert(uint64_t hash) {
      all.insert(hash);
      last = hash;
    }
    bool contains(uint64_t hash) const { return last == hash || all.contains(hash); }
    void clear() {
      all.clear();
      last.reset();
    }
  };
  FailedAlike failed_alike_;
  // Counts changes to what likenesses read besides the job itself: profiles,
  // priors, families and their measurements (knowledge_.version()), and bad
  // combinations (only ever added). A job's likeness computed at the same
  // count is still its likeness, so an event skips a job alike a failed one
  // without looking anything up (cached in QueuedJob::alike); never 0, so
  // that 0 means never computed.
  uint64_t likeness_version() const { return knowledge_.version() + verdicts_.bad.size(); }
  // Whether the cached likeness of `w` is still its likeness: computed at
  // this likeness_version(), or from a usable profile whose stamp and the
  // bad combinations' count are what they were then (it is then stamped
  // with this version: a sweep's point keeps its likeness while other
  // points are measured). Reads no profile.
  bool alike_holds(const Waiting& w) const {
    if (w.alike.knowledge == likeness_version()) return true;
    if (w.alike.knowledge == 0 || w.alike.usable == 0 || w.alike.bad != verdicts_.bad.size() ||
        knowledge_.usable_stamp(w.lookups) != w.alike.usable)
      return false;
    w.alike.knowledge = likeness_version();
    return true;
  }
  // The cached likeness of `w` when still valid and failed in this call.
  bool known_failed(const Waiting& w) const {
    return alike_holds(w) && failed_alike_.contains(w.alike.hash);
  }
  // A likeness's hash, field by field (each mixed in, so that the order and
  // every bit count), without formatting the likeness as text first.
  struct LikenessHash {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    LikenessHash& add(uint64_t v) {
      h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h ^= h >> 31;
      h *= 0xbf58476d1ce4e5b9ULL;
      return *this;
    }
    LikenessHash& add(int64_t v) { return add(static_cast<uint64_t>(v)); }
    LikenessHash& add(bool v) { return add(static_cast<uint64_t>(v ? 1 : 2)); }
    LikenessHash& add(double v) { return add(std::bit_cast<uint64_t>(v)); }
    LikenessHash& add(std::string_view v) { return add(of(v)); }
    // What add(v) mixes in for a text: hashed once where it is a constant.
    static uint64_t of(std::string_view v) { return std::hash<std::string_view>{}(v); }
  };
  inline static const uint64_t kNewHash = LikenessHash::of("new");
  inline static const uint64_t kPlacedHash = LikenessHash::of("placed");
  inline static const uint64_t kNoSignatureHash = LikenessHash::of("");
  // w's likeness, from `hash()` (a LikenessHash) unless cached at this
  // likeness_version() (place() asked known_failed() first, which stamps a
  // likeness that holds with it), with `startup` (its usable profile's
  // start-up, 0 without one: what longest_queued_startup() reads of it
  // while the likeness holds) and `usable` (that profile's stamp; 0:
  // computed without one); true when a job alike it failed already in this
  // call.
  template <typename Hash>
  bool alike_failed(const Waiting& w, int64_t startup, uint64_t usable, const Hash& hash) const {
    if (w.alike.knowledge != likeness_version())
      w.alike = {likeness_version(), hash().h, startup, usable, verdicts_.bad.size()};
    return failed_alike_.contains(w.alike.hash);
  }
  // Estimates used in this schedule() call: the note's text -> instances.
  std::map<std::string, std::vector<std::string>> estimate_notes_;
  std::unordered_map<size_t, Running> running_;
  Verdicts verdicts_;
  std::vector<Unplaceable> unplaceable_;
  std::vector<Unplaceable> stops_;  // take_stops()
  std::vector<std::string> notes_;
  struct Classes {
    // A protected or opportunistic job was enqueued: the classes are looked
    // at (qos_join_on()) from then on.
    bool any = false;
    // Why queued jobs that every GPU's classes refused wait
    // (waiting_reason()), as their last try left it; dropped when one starts.
    std::unordered_map<size_t, WaitingReason> waits;
  };
  Classes classes_;
  std::set<int> reserved_;  // devices kept for a gang
  std::optional<int64_t> reserved_until_;
  // The head of the queue as the last schedule() left it (none while every
  // queued job could start or waits for something else), and when; its
  // reservation once found (reservation(): an event where no later job
  // could start anyway does not pay for it).
  struct Head {
    Waiting waiting;
    int64_t found_ms = 0;
  };
  struct HeadOfQueue {
    std::optional<Head> head;
    mutable std::optional<std::optional<Reservation>> reservation;
    bool sought = false;  // this schedule() found the head
  };
  HeadOfQueue head_of_queue_;
};

}  // namespace colo
