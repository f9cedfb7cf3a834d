// colo serve's process (service.h: run_service): one service per store and
// per socket, the GPUs taken through one RunSession, the HTTP API beside it,
// and the loop that answers requests and ticks the engine until SIGTERM
// stops or drains it; then the usage kept, the session closed, and what the
// run taught derived once.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/stored.h"
#include "common/heap.h"
#include "common/paths.h"
#include "common/stop_signal.h"
#include "common/units.h"
#include "common/users.h"
#include "run/log_layout.h"
#include "serve/sample_thinning.h"
#include "serve/service.h"
#include "store/store_file.h"

namespace colo {
namespace {

// How long the service keeps trying a store locked by another colo (its run's
// record at start, what is left to write at the end).
constexpr int64_t kStoreRetryMs = 60'000;
// Every second (with the publish) the service gives the heap's free pages
// back to the kernel where more than kHeapSlackBytes of them are resident
// beyond what trimming could not give back last time (HeapTrimmer): what a
// large submission or the passes after it freed, within a second of it, and
// the pages that malloc's reuse brings back over the minutes after. The
// bound: at each look, the service's resident memory is at most what is in
// use, plus that floor, plus 8 MB (with 10,000 jobs queued on 64 GPUs, 85 MB
// in use; issue 59).
constexpr size_t kHeapSlackBytes = size_t{8} << 20;
// How often the jobs that ended are derived and kept (RunFactsKeeper).
constexpr int64_t kKeepFactsEveryMs = 10'000;
// How often the checkpoints of jobs that ended ok are looked for
// (--keep-checkpoints).
constexpr int64_t kCheckpointSweepEveryMs = 600'000;
// How often the service reads every page of its store (PRAGMA quick_check).
constexpr int64_t kStoreQuickCheckMs = 600'000;  // 10 minutes

ServiceInfo service_info(const RunSession& session, const ServeContext& ctx,
                         const RunEngine& engine) {
  ServiceInfo info;
  info.pid = getpid();
  info.user = user_name_of(geteuid());
  info.host = session.record().host;
  info.started_ms = session.record().started_ms;
  info.backend = ctx.backend.name();
  info.simulated = ctx.backend.simulated();
  info.mechanism = to_string(ctx.mechanism.kind());
  if (ctx.mechanism.kind() == MechanismKind::kMps)
    info.mps_users = ctx.mechanism.users_time_slice() ? "separate" : "shared";
  info.policy = engine.policy_description();
  info.run_id = session.run_id();
  info.state = "running";
  info.store = ctx.store.path();
  return info;
}

// The HTTP API answers from the service's published snapshot and its own
// read-only connection to the store, so that HTTP readers never wait for
// the loop.
void serve_http(HttpServer& http, Service& service, const ServeOptions& options,
                const ServeContext& ctx) {
  Result<std::unique_ptr<RunStore>> reader = RunStore::open_read_only(ctx.store.path());
  if (!reader.ok()) {
    ctx.log << "warning: the HTTP API cannot read the store (" << reader.error().message()
            << "); /api/jobs/ID and /api/runs answer 503\n";
  }
  service.set_http_address(http.address());
  service.publish();
  auto routes =
      std::make_shared<ApiRoutes>([&service] { return service.latest_snapshot(); },
                                  reader.ok() ? std::move(reader).value() : nullptr, *options.http);
  if (options.http_pages) routes->add_pages(options.http_pages(ctx.store.path()));
  http.serve(routes);
  ctx.log << fmt::format(
      "http: http://{}/ ({}), the read-only API under /api and /metrics (docs/serve.md)\n",
      http.address(), options.http_pages ? "the dashboard" : "the API's routes");
  if (!is_loopback(options.http->host)) {
    ctx.log << fmt::format(
        "warning: --http {} is reachable from other machines: anyone who reaches it reads "
        "the queue{}\n",
        http.address(), options.http->logs ? " and the jobs' log tails" : "");
  }
}

// Answers requests and ticks the engine until the service is stopped: on
// SIGTERM it stops (running jobs stopped, queued again for the next start)
// or, with drain_on_stop, drains first (no new job starts; a second SIGTERM
// stops).
// The snapshot is published (Service::publish) every second only where the
// HTTP API reads it (`http`): it copies every GPU's recent samples (64 GPUs:
// 3 MB), which no one else reads.
void serve_until_stopped(SocketServer& server, Service& service, RunEngine& engine,
                         StoreWriter& writer, const ServeOptions& options, const ServeContext& ctx,
                         bool http) {
  const SocketServer::Handler handler = [&service](const Caller& caller, const std::string& r) {
    return service.answer(caller, r);
  };
  int handled_stops = 0;
  bool stopping = false;
  int64_t next_publish = ctx.clock.monotonic_ms() + 1000;
  int64_t next_checkpoint_sweep = next_publish;
  HeapTrimmer heap(kHeapSlackBytes);
  int64_t next_quick_check = ctx.clock.monotonic_ms() + kStoreQuickCheckMs;
  SampleThinning thinning(ctx.store, ctx.clock, ctx.log, engine.run_id(),
                          options.samples_full_for_ms, options.samples_thinned_to_ms);
  // What the run teaches (its jobs' contributions to profiles), kept as its
  // jobs end: the first command after this service, however it ended,
  // derives only what ended after the last keep.
  RunFactsKeeper facts(ctx.store, engine.run_id());
  int64_t next_facts = ctx.clock.monotonic_ms() + kKeepFactsEveryMs;
  // A damaged file halts the service when two checks a second apart agree
  // (one might read the header while SQLite rewrites it).
  std::string damage_seen;
  while (true) {
    const int stops = ctx.stop_requests.load();
    if (stops > handled_stops) {
      handled_stops = stops;
      if (options.drain_on_stop && stops == 1) {
        service.set_state("draining");
        engine.hold(true);
        ctx.log << fmt::format(
            "draining: no new job starts; waiting for {} running jobs ({} again to stop "
            "them)\n",
            engine.running(), stop_signal_name("SIGTERM"));
      } else {
        stopping = true;
        service.set_state("stopping");
        const int kill_at = options.drain_on_stop ? 3 : 2;
        engine.stop_all(RunEngine::StopKind::kShutdown,
                        stops >= kill_at ? 0 : options.engine.stop_grace_ms,
                        "colo serve was stopped");
      }
    }
    server.poll_once(static_cast<int>(options.tick_ms), handler);
    engine.tick();
    service.record_changes();
    const int64_t now = ctx.clock.monotonic_ms();
    if (now >= next_publish) {
      if (!service.halted()) {
        std::string why = ctx.store.file_damage();
        if (store_damage_confirmed(damage_seen, why)) service.halt(why);
        damage_seen = why;
      }
      if (!service.halted() && now >= next_quick_check) {
        if (Status sound = ctx.store.quick_check(); !sound.ok())
          service.halt("is damaged: " + sound.error().message());
        next_quick_check = now + kStoreQuickCheckMs;
      }
      service.account_usage();
      service.preempt_for_waiting();
      thinning.tick();
      if (now >= next_facts && writer.queued() == 0) {
        // Jobs that ended a flush ago or more: their rows are all written.
        const UnixMillis before = ctx.clock.now_ms() - 2 * options.engine.flush_ms - 1000;
        if (Status kept = facts.update(before); !kept.ok())
          ctx.log << "warning: what ended jobs taught was not kept (tried again later): "
                  << kept.error().message() << '\n';
        next_facts = now + kKeepFactsEveryMs;
      }
      if (now >= next_checkpoint_sweep) {
        service.sweep_checkpoints();
        next_checkpoint_sweep = now + kCheckpointSweepEveryMs;
      }
      if (http) service.publish();
      next_publish = now + 1000;
      heap.maybe_trim();
    }
    if (stopping && engine.idle()) break;
    if (service.state() == "draining" && engine.running() == 0) {
      engine.stop_all(RunEngine::StopKind::kShutdown, 0, "colo serve was stopped");
      break;
    }
  }
}

}  // namespace

Status run_service(const ServeOptions& options, ServeContext& ctx) {
  if (ctx.mechanism.kind() == MechanismKind::kMig) {
    return Error(
        "colo serve does not run the mig mechanism yet: a MIG layout is made for a known set of "
        "jobs, and the service would have to repartition the GPU as jobs arrive; run MIG jobs with "
        "`colo run --mechanism mig`, or serve with --mechanism mps, naive or exclusive");
  }
  RunSession session(SessionContext{ctx.clock, ctx.backend, ctx.store, ctx.mechanism,
                                    ctx.mechanism_options, ctx.log, ctx.stop_requests},
                     SessionOptions{options.gpus, options.slurm, options.locks, "",
                                    options.command_line, "", "", kStoreRetryMs});
  session.clean_up();
  // One service per store (its queue) and per socket; clients may queue
  // requests on the socket while the GPUs are taken.
  Result<std::unique_ptr<LockFile>> store_lock = LockFile::acquire(
      ctx.store.path() + ".serve.lock", "another colo serve",
      "owns the queue in " + ctx.store.path() + "; stop it first, or use another --db");
  if (!store_lock.ok()) return store_lock.error();
  // Jobs run as their submitters pass through it and the directories above
  // their own files to them (0711: no one else may list them), also where a
  // secret written first, or an earlier colo, made them 0700.
  std::vector<std::string> passed = service_parent_dirs(options.logs_root);
  passed.insert(passed.begin(), options.logs_root);
  for (const std::string& dir : passed) {
    if (Status made = make_dirs(dir, 0711); !made.ok()) return made;
    if (::geteuid() == 0) ::chmod(dir.c_str(), 0711);
  }
  ListenOptions listen;
  listen.path = options.socket_path;
  listen.group = options.socket_group;
  Result<std::unique_ptr<SocketServer>> server = SocketServer::listen(listen);
  if (!server.ok()) return server.error();
  std::unique_ptr<HttpServer> http;
  if (options.http) {
    Result<std::unique_ptr<HttpServer>> bound = HttpServer::bind(*options.http);
    if (!bound.ok()) return bound.error();
    http = std::move(bound).value();
  }
  if (Status s = session.open(); !s.ok()) return s;

  RunEngine engine(session.engine_context(ctx.log), options.engine, session.run_id(),
                   session.token(), session.devices());
  engine.start();
  Service service(ctx, options, engine, session.writer(), service_info(session, ctx, engine));
  if (Status s = service.recover_queue(); !s.ok())
    ctx.log << "warning: " << s.error().message() << '\n';
  ctx.log << fmt::format(
      "colo serve: pid {}, {} GPU{} ({}{}), mechanism {}, policy {}; socket {}; run {}\n", getpid(),
      session.devices().size(), session.devices().size() == 1 ? "" : "s",
      session.devices().front().name, ctx.backend.simulated() ? ", SIMULATED" : "",
      to_string(ctx.mechanism.kind()), engine.policy_description(), options.socket_path,
      session.run_id());
  if (http) serve_http(*http, service, options, ctx);
  serve_until_stopped(**server, service, engine, session.writer(), options, ctx, http != nullptr);
  if (http) http->stop();  // its routes read `service`
  engine.finish();
  service.record_changes();
  service.account_usage();
  if (Status kept = service.keep_usage(); !kept.ok())
    ctx.log << "warning: the users' fair-share usage was not kept: " << kept.error().message()
            << '\n';
  if (Status s = session.close(RunState::kOk); !s.ok())
    ctx.log << "warning: " << s.error().message() << '\n';
  if (!service.halted()) {
    // What later starts and shows read of this run instead of its rows (its
    // samples' figures, what it taught the profiles), derived once now: else
    // the first command after days of service derives it (one pass over
    // every sample, a second or two a day of 8 GPUs).
    const int64_t from_ms = ctx.clock.monotonic_ms();
    if (Status kept = keep_run_derivations(ctx.store, session.run_id()); !kept.ok()) {
      ctx.log << "warning: what the run's samples and jobs say was not kept (the next start "
                 "derives it): "
              << kept.error().message() << '\n';
    } else if (const int64_t took = ctx.clock.monotonic_ms() - from_ms; took >= 1000) {
      ctx.log << fmt::format("colo serve: kept what run {} taught (its samples and jobs) in {}\n",
                             session.run_id(), format_duration_ms(took));
    }
  }
  if (service.halted()) {
    ctx.log << fmt::format(
        "colo serve stopped; its store was lost, so no job is kept for the next "
        "start{}\n",
        service.lost_queue_path().empty()
            ? ""
            : ": the queue it held is in " + service.lost_queue_path());
  } else {
    ctx.log << "colo serve stopped; queued jobs stay in the store for the next start\n";
  }
  return OkStatus();
}

}  // namespace colo
