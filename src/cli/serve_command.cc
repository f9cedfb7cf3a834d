// `colo serve` and its clients: `colo submit`, `colo queue`, `colo cancel`,
// `colo logs`, `colo wait`; and `colo run` when a service runs.
#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/paths.h"
#include "common/stop_signal.h"
#include "common/units.h"
#include "jobs/job_file.h"
#include "jobs/job_spec_json.h"
#include "jobs/job_state.h"
#include "run/log_layout.h"
#include "serve/client.h"
#include "serve/protocol.h"
#include "serve/service.h"
#include "sharing/make_mechanism.h"
#include "sharing/mps_probe_client.h"
#include "slurm/allocation.h"
#include "views/dashboard.h"

namespace colo {
namespace {

using nlohmann::json;

std::atomic<int> g_serve_stops{0};
std::atomic<int> g_client_detach{0};

void on_serve_stop(int signo) {
  note_stop_signal(signo);
  g_serve_stops.fetch_add(1);
}
void on_client_detach(int /*signo*/) { g_client_detach.fetch_add(1); }

void install(int signo, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(signo, &sa, nullptr);
}

// The service named by --socket, else the first one found; prints why not.
std::optional<ServiceClient> connect(const std::string& socket) {
  std::vector<std::string> candidates =
      socket.empty() ? service_socket_candidates() : std::vector<std::string>{socket};
  Result<ServiceClient> client = ServiceClient::find(candidates);
  if (client.ok()) return std::move(client).value();
  std::cerr << fmt::format(
      "colo: {} (start one with `colo serve`, or name its socket with --socket or "
      "$COLO_SOCKET)\n",
      client.error().message());
  return std::nullopt;
}

// ---- colo serve ------------------------------------------------------------

struct ServeFlags {
  BackendFlags backend;
  std::string mechanism;
  std::string mps_users = "auto";  // auto, shared, separate (sharing/mps_users.h)
  std::string policy = "auto";
  std::vector<int> gpus;
  std::string db;
  std::string logs;
  std::string socket;
  std::string socket_group;
  std::string admin_group;
  std::optional<int> max_per_gpu;
  size_t max_jobs_per_user = 10'000;
  std::optional<double> max_gpus_per_user;
  std::optional<int> max_protected_gpus_per_user;
  std::optional<int> max_protected_gpus_per_group;
  std::string preempt_after;  // empty: off
  std::string job_host_memory;
  std::optional<int> job_cpus;
  std::string sample_period = "500ms";
  std::string grace = "10s";
  std::string fair_share_half_life = "1d";
  std::string queue_order = "fair-share";
  std::vector<std::string> fair_share_weights;  // USER=W or @GROUP=W
  std::vector<std::string> max_gpus_for;        // USER=N or @GROUP=N
  std::vector<std::string> max_jobs_for;        // USER=M or @GROUP=M
  std::string samples_full_for = "7d";
  std::string samples_thinned_to = "1m";
  std::string stall_timeout;
  DiskFlags disk;
  std::string on_sigterm = "stop";
  std::string lock_dir;
  bool no_wait = false;
  std::string http;  // ADDR:PORT; empty: no HTTP
  bool http_logs = false;
};

// A WHO=VALUE flag's values (--fair-share-weight, --max-gpus-for,
// --max-jobs-for): WHO a user of this machine or @GROUP one of its groups,
// VALUE above 0 and at most `most` (whole where `whole`); `hint` says what to
// write. False (said) on bad input.
struct WhoValue {
  bool group = false;
  uint32_t id = 0;  // uid or gid
  std::string name;
  double value = 0;
};
bool parse_who_values(const std::string& flag, const std::vector<std::string>& texts, double most,
                      bool whole, const std::string& hint, std::vector<WhoValue>& out) {
  for (const std::string& text : texts) {
    const size_t eq = text.rfind('=');
    double value = 0;
    const std::string name = text.substr(0, eq == std::string::npos ? 0 : eq);
    const std::string number = eq == std::string::npos ? "" : text.substr(eq + 1);
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (name.empty() || name == "@" || ec != std::errc() || end != number.data() + number.size() ||
        !(value > 0) || value > most || (whole && value != std::floor(value))) {
      std::cerr << "colo: " << flag << " '" << text << "': " << hint << "\n";
      return false;
    }
    WhoValue who{name.front() == '@', 0, name.front() == '@' ? name.substr(1) : name, value};
    Result<uint32_t> id = who.group ? group_id(who.name) : user_id(who.name);
    if (!id.ok()) {
      std::cerr << "colo: " << flag << " '" << text << "': " << id.error().message() << "\n";
      return false;
    }
    who.id = *id;
    out.push_back(std::move(who));
  }
  return true;
}

// --fair-share-weight, --max-gpus-for and --max-jobs-for into the options;
// false (said) on bad input.
bool parse_user_and_group_settings(const ServeFlags& flags, ServeOptions& options) {
  std::vector<WhoValue> weights, gpus, jobs;
  if (!parse_who_values("--fair-share-weight", flags.fair_share_weights, 1e6, false,
                        "write USER=WEIGHT or @GROUP=WEIGHT, a weight above 0 (alice=2: alice is "
                        "owed twice the GPU time of a user of weight 1)",
                        weights) ||
      !parse_who_values("--max-gpus-for", flags.max_gpus_for, 1e6, false,
                        "write USER=GPUS or @GROUP=GPUS, above 0 (alice=2: at most 2 GPUs' worth "
                        "of alice's jobs at once; @vision=4: of the group's members' together)",
                        gpus) ||
      !parse_who_values("--max-jobs-for", flags.max_jobs_for, 1e9, true,
                        "write USER=JOBS or @GROUP=JOBS, a whole number above 0 (alice=500: at "
                        "most 500 of alice's jobs queued or running)",
                        jobs)) {
    return false;
  }
  for (const WhoValue& w : weights)
    (w.group ? options.usage.group_weights : options.usage.user_weights)[w.id] = w.value;
  const auto quota = [&](const WhoValue& w) -> ServeOptions::Quota& {
    ServeOptions::Quota& q = (w.group ? options.quotas.groups : options.quotas.users)[w.id];
    q.name = w.name;
    return q;
  };
  for (const WhoValue& w : gpus) quota(w).gpus = w.value;
  for (const WhoValue& w : jobs) quota(w).jobs = static_cast<size_t>(w.value);
  return true;
}

// The GPU the multi-user MPS probe runs on: the first of `gpus` (all of the
// backend's when empty); "" on a simulated backend, which has no GPU to prove
// anything on.
Result<std::string> first_service_gpu_uuid(GpuBackend& backend, const std::vector<int>& gpus) {
  if (backend.simulated()) return std::string();
  Result<std::vector<DeviceInfo>> devices = backend.devices();
  if (!devices.ok()) return devices.error();
  for (const DeviceInfo& device : *devices) {
    if (gpus.empty() || device.index == gpus.front()) return device.uuid;
  }
  return Error(fmt::format("no GPU of index {} to probe on", gpus.front()));
}

int serve_command(const ServeFlags& flags, const std::string& command_line) {
  std::optional<int64_t> period =
      duration_flag("--sample-period", flags.sample_period, 100, "GPM needs that");
  std::optional<int64_t> grace = duration_flag("--grace", flags.grace, 0);
  std::optional<int64_t> half_life =
      duration_flag("--fair-share-half-life", flags.fair_share_half_life, 1000);
  std::optional<int64_t> full_for = duration_flag("--samples-full-for", flags.samples_full_for, 0);
  std::optional<int64_t> thinned_to =
      duration_flag("--samples-thinned-to", flags.samples_thinned_to, 0);
  if (!period || !grace || !half_life || !full_for || !thinned_to) return kExitBadInput;
  ServeOptions options;
  options.usage.half_life_ms = *half_life;
  options.fair_share = flags.queue_order == "fair-share";
  if (!parse_user_and_group_settings(flags, options)) return kExitBadInput;
  if (!flags.preempt_after.empty()) {
    std::optional<int64_t> after = duration_flag("--preempt-after", flags.preempt_after, 1000);
    if (!after) return kExitBadInput;
    options.preempt_after_ms = *after;
  }
  options.samples_full_for_ms = *full_for;
  options.samples_thinned_to_ms = *thinned_to;
  if (!flags.http.empty()) {
    Result<HttpOptions> http = parse_http_address(flags.http);
    if (!http.ok()) {
      std::cerr << "colo: " << http.error().message() << "\n";
      return kExitBadInput;
    }
    http->logs = flags.http_logs;
    options.http = *http;
    options.http_pages = dashboard_routes;
  } else if (flags.http_logs) {
    std::cerr << "colo: --http-logs needs --http ADDR:PORT (the HTTP API is off without it)\n";
    return kExitBadInput;
  }
  if (!flags.socket_group.empty()) {
    Result<gid_t> gid = group_id(flags.socket_group);
    if (!gid.ok()) {
      std::cerr << "colo: --socket-group: " << gid.error().message() << "\n";
      return kExitBadInput;
    }
    options.socket_group = *gid;
  }
  if (!flags.job_host_memory.empty()) {
    Result<uint64_t> bytes = parse_bytes(flags.job_host_memory);
    if (!bytes.ok() || *bytes == 0) {
      std::cerr << "colo: --job-host-memory: "
                << (bytes.ok() ? "must be above zero" : bytes.error().message())
                << " (write a size such as 32GiB)\n";
      return kExitBadInput;
    }
    options.engine.default_limits.memory_bytes = *bytes;
  }
  options.engine.default_limits.cpus = flags.job_cpus;
  if (!flags.admin_group.empty()) {
    Result<gid_t> gid = group_id(flags.admin_group);
    if (!gid.ok()) {
      std::cerr << "colo: --admin-group: " << gid.error().message() << "\n";
      return kExitBadInput;
    }
    options.admin_group = *gid;
  }

  // Made first, before anything is made in it: jobs run as their
  // submitters pass through it (the Python client, their own files) and
  // list nothing (0711; one already there is left as it is).
  if (Status made = make_dirs(default_state_dir(), 0711); !made.ok()) {
    std::cerr << "colo serve: " << made.error().message() << "\n";
    return kExitEnvironment;
  }
  SystemClock clock;
  Result<std::unique_ptr<GpuBackend>> backend = open_backend(flags.backend, clock);
  if (!backend.ok()) {
    std::cerr << "colo: " << backend.error().message() << "\n";
    return kExitEnvironment;
  }
  // Inside a Slurm allocation: only its GPUs, and its node-local MPS directory.
  const EnvLookup env = process_environment();
  std::optional<SlurmAllocation> slurm;
  if (!read_slurm_allocation(env, slurm)) return kExitEnvironment;
  options.slurm = slurm;
  MechanismOptions mech_options = default_mechanism_options();
  mech_options.state_dir = node_local_state_dir(slurm, env) + "/mps";
  std::optional<MechanismKind> kind =
      choose_mechanism(flags.mechanism, std::nullopt, "", **backend, mech_options);
  if (!kind) return kExitBadInput;
  if (*kind == MechanismKind::kMps) {
    // Once, before the mechanism is made: one server for every user, or a
    // daemon each (docs/serve.md, "MPS and several users").
    Result<MpsUsersChoice> users =
        decide_mps_users(parse_mps_users(flags.mps_users).value(), mech_options);
    if (!users.ok()) {
      std::cerr << "colo: " << users.error().message() << "\n";
      return kExitBadInput;
    }
    const gid_t group = options.socket_group.value_or(getegid());
    if (users->shared && flags.mps_users == "auto") {
      // The help text says the driver can; two real clients say whether it
      // does (sharing/mps_user_probe.h). Not on the simulated backend.
      Result<std::string> gpu = first_service_gpu_uuid(**backend, flags.gpus);
      if (!gpu.ok()) {
        *users = after_mps_probe(*users, gpu.error());
      } else if (!gpu->empty()) {
        std::cerr << "colo: MPS: proving the multi-user server: a client of uid " << getuid()
                  << " and one of uid 65534 (group " << group << ") on " << *gpu << "\n";
        ProcessMpsUserProbe probe({"/proc/self/exe", ClientUser{65534, group, {group}}}, clock);
        *users = prove_shared_mps(*users, mech_options, group, *gpu, probe);
      }
    }
    std::cerr << "colo: " << users->line << "\n";
    // Those who may submit (the socket's group) reach the shared server.
    if (users->shared) mech_options.mps_multiuser_group = group;
  } else if (flags.mps_users != "auto") {
    std::cerr << fmt::format(
        "colo: --mps-users applies to --mechanism mps only; this service runs {}\n",
        to_string(*kind));
    return kExitBadInput;
  }
  Result<std::unique_ptr<Mechanism>> mechanism = make_mechanism(*kind, mech_options);
  if (!mechanism.ok()) {
    std::cerr << "colo: " << mechanism.error().message() << "\n";
    return kExitEnvironment;
  }
  std::string db_path = flags.db.empty() ? default_db_path() : flags.db;
  Result<std::unique_ptr<RunStore>> store = RunStore::open(db_path);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }

  options.gpus = flags.gpus;
  options.locks.dir = flags.lock_dir;
  options.locks.wait = !flags.no_wait;
  options.socket_path = flags.socket.empty() ? default_service_socket() : flags.socket;
  options.logs_root = service_logs_dir(flags.logs, db_path);
  options.engine.policy = flags.policy;
  options.engine.max_jobs_per_gpu = flags.max_per_gpu;
  options.engine.sample_period_ms = *period;
  options.engine.stop_grace_ms = *grace;
  if (!stall_timeout_flag(flags.stall_timeout, options.engine.stall)) return kExitBadInput;
  if (!disk_flags(flags.disk, options.engine.max_log_bytes, options.engine.keep_checkpoints_ms))
    return kExitBadInput;
  options.drain_on_stop = flags.on_sigterm == "drain";
  options.quotas.max_jobs_per_user = flags.max_jobs_per_user;
  options.quotas.max_gpus_per_user = flags.max_gpus_per_user;
  options.quotas.max_protected_gpus_per_user = flags.max_protected_gpus_per_user;
  options.quotas.max_protected_gpus_per_group = flags.max_protected_gpus_per_group;
  options.engine.quotas = options.gpu_quotas();
  options.command_line = command_line;

  install(SIGTERM, on_serve_stop);
  install(SIGINT, on_serve_stop);
  install(SIGHUP, SIG_IGN);  // a service outlives the terminal that started it
  install(SIGPIPE, SIG_IGN);
  ServeContext ctx{clock, **backend, **store, **mechanism, mech_options, std::cerr, g_serve_stops};
  if (Status s = run_service(options, ctx); !s.ok()) {
    std::cerr << "colo serve: " << s.error().message() << "\n";
    return kExitEnvironment;
  }
  return kExitOk;
}

// ---- colo submit -------------------------------------------------------------

// Submits the jobs of `file`; the answer (ids, the service's mechanism and
// policy), after warning about [run] settings the service does not take.
// `priority`: every job's, over what the file says (the file's class and
// floor come already overridden: apply_qos_flags); `label` names the
// submission.
// The label as a submit request carries it: null when it says nothing.
json label_request(const RunLabel& label) {
  if (label.name.empty() && label.tags.empty() && label.note.empty()) return nullptr;
  return json{{"name", label.name}, {"tags", label.tags}, {"note", label.note}};
}

Result<json> submit_file(const ServiceClient& client, const JobFile& file,
                         std::optional<int> priority = std::nullopt, const RunLabel& label = {}) {
  json jobs = json::array();
  for (JobSpec spec : file.jobs) {
    if (priority) spec.priority = *priority;
    if (spec.dataset) {  // the service starts the loader: it needs the table
      if (auto d = file.data_sources.find(*spec.dataset); d != file.data_sources.end())
        spec.data_source = d->second;
    }
    jobs.push_back(job_spec_to_json(spec));
  }
  Result<json> answer = client.submit(absolute_path(file.path), std::move(jobs),
                                      client_environment(), label_request(label));
  if (!answer.ok()) return answer;
  const std::string mechanism = (*answer)["service"].value("mechanism", "");
  if (file.mechanism && *file.mechanism != mechanism) {
    std::cerr << fmt::format("colo: {}: [run] mechanism = \"{}\" is ignored: the service runs {}\n",
                             file.path, *file.mechanism, mechanism);
  }
  if (file.max_jobs_per_gpu || file.policy) {
    std::cerr << fmt::format(
        "colo: {}: [run] policy and max_per_gpu are the service's to choose (it runs {}); "
        "ignored\n",
        file.path, (*answer)["service"].value("policy", "?"));
  }
  return answer;
}

struct ClientFlags {
  std::string socket;
  bool json = false;
};

// Job ids as ranges of consecutive ones, in order: "1-10000", "3 5-7".
std::string id_ranges(const std::vector<int64_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += fmt::format("{}{}", out.empty() ? "" : " ", ids[i]);
    if (j > i) out += fmt::format("-{}", ids[j]);
    i = j + 1;
  }
  return out;
}

int submit_command(const std::string& path, const std::string& resume, std::optional<int> priority,
                   const QosFlags& qos, const LabelFlags& labels, const ClientFlags& flags) {
  if (path.empty() == resume.empty()) {
    std::cerr << "colo: submit needs a job file, or --resume SUB (the jobs of a submission that "
                 "did not end ok), not both\n";
    return kExitBadInput;
  }
  if (!resume.empty() && priority) {
    std::cerr << "colo: --priority is for a job file; a resumed job keeps the priority it was "
                 "submitted with\n";
    return kExitBadInput;
  }
  if (!resume.empty() && qos.given()) {
    std::cerr << "colo: --qos and --min-speed are for a job file; a resumed job keeps the class "
                 "it was submitted with\n";
    return kExitBadInput;
  }
  // A resumption's flags go as given (--tag KEY= too): the service applies
  // them over the label the resumed submission carries.
  Result<RunLabel> label = resume.empty() ? apply_label_flags(labels, {}) : given_label(labels);
  if (!label.ok()) {
    std::cerr << "colo: " << label.error().message() << "\n";
    return kExitBadInput;
  }
  std::optional<JobFile> file;
  if (resume.empty()) {
    Result<JobFile> loaded = load_job_file(path);
    if (!loaded.ok()) {
      std::cerr << "colo: " << loaded.error().message() << "\n";
      return kExitBadInput;
    }
    if (Status s = apply_qos_flags(qos, *loaded); !s.ok()) {
      std::cerr << "colo: " << s.error().message() << "\n";
      return kExitBadInput;
    }
    file = std::move(loaded).value();
  }
  std::optional<ServiceClient> client = connect(flags.socket);
  if (!client) return kExitEnvironment;
  Result<json> answer = file ? submit_file(*client, *file, priority, *label)
                             : client->resume(resume, client_environment(), label_request(*label));
  if (!answer.ok()) {
    std::cerr << "colo: " << answer.error().message() << "\n";
    return exit_code_of(answer.error());
  }
  if (answer->contains("resumed") && !flags.json) {
    const json& resumed = (*answer)["resumed"];
    const auto with_checkpoint = std::count_if(
        resumed.begin(), resumed.end(), [](const json& r) { return r.value("checkpoint", false); });
    std::cout << fmt::format(
        "resuming submission {}: {} that did not end ok ({} with a checkpoint directory); {} "
        "ended ok and {} not run again\n",
        resume, count_of(static_cast<int64_t>(resumed.size()), "job"), with_checkpoint,
        count_of(answer->value("ended_well", int64_t{0}), "job"),
        answer->value("ended_well", int64_t{0}) == 1 ? "is" : "are");
  }
  std::vector<int64_t> ids = (*answer)["ids"];
  // A service of an older colo answers without them.
  const std::string submission =
      answer->contains("submission")
          ? fmt::format("{}/{}", answer->value("run", int64_t{0}), answer->value("submission", 0))
          : "";
  if (flags.json) {
    json out = {{"ids", ids}};
    if (!submission.empty()) {
      out["run"] = (*answer)["run"];
      out["submission"] = (*answer)["submission"];
    }
    if (answer->contains("resumed")) {
      out["resumed"] = (*answer)["resumed"];
      out["ended_well"] = (*answer)["ended_well"];
    }
    std::cout << out.dump() << "\n";
  } else {
    std::cout << fmt::format("submitted {}: {}", count_of(static_cast<int64_t>(ids.size()), "job"),
                             id_ranges(ids));
    if (!submission.empty()) {
      std::cout << fmt::format("; submission {} (colo show {})", submission,
                               label->name.empty() ? submission : label->name);
    }
    std::cout << "\n";
  }
  return kExitOk;
}

// ---- colo queue, cancel, logs, wait -----------------------------------------

// Which queued jobs `colo queue` shows: the service's first page by default.
struct QueuePage {
  int64_t offset = 0;
  int64_t limit = protocol::kQueuedPage;
};

int queue_command(const ClientFlags& flags, const QueuePage& page) {
  std::optional<ServiceClient> client = connect(flags.socket);
  if (!client) return kExitEnvironment;
  // --json keeps the documented history; the table is the service's own.
  Result<json> answer =
      client->call(flags.json ? protocol::queue_request(page.offset, page.limit)
                              : protocol::queue_table_request(page.offset, page.limit));
  if (!answer.ok()) {
    std::cerr << "colo: " << answer.error().message() << "\n";
    return exit_code_of(answer.error());
  }
  if (flags.json) {
    std::cout << (*answer)["snapshot"].dump(2) << "\n";
    return kExitOk;
  }
  if (auto table = answer->find("table"); table != answer->end() && table->is_string()) {
    std::cout << table->get_ref<const std::string&>();
    return kExitOk;
  }
  // A service from before the table answer sends its snapshot.
  Result<ServiceSnapshot> snapshot = snapshot_from_json((*answer)["snapshot"]);
  if (!snapshot.ok()) {
    std::cerr << "colo: " << snapshot.error().message() << "\n";
    return kExitEnvironment;
  }
  std::cout << format_queue(*snapshot, SystemClock().now_ms());
  return kExitOk;
}

// A user's primary group in this machine's user database (the service's:
// colo usage talks to a local socket); a user it does not know stands alone,
// under their own name.
std::string primary_group_of(const std::string& user) {
  const struct passwd* pw = ::getpwnam(user.c_str());
  if (pw == nullptr) return user;
  const struct group* gr = ::getgrgid(pw->pw_gid);
  return gr != nullptr ? std::string(gr->gr_name) : std::to_string(pw->pw_gid);
}

int usage_command(const ClientFlags& flags, const std::string& since, bool csv,
                  const std::string& by) {
  std::optional<int64_t> span = duration_flag("--since", since, 1000);
  if (!span) return kExitBadInput;
  std::optional<ServiceClient> client = connect(flags.socket);
  if (!client) return kExitEnvironment;
  const int64_t since_ms = SystemClock().now_ms() - *span;
  Result<json> answer = client->call(protocol::usage_request(since_ms));
  if (!answer.ok()) {
    std::cerr << "colo: " << answer.error().message() << "\n";
    return exit_code_of(answer.error());
  }
  if (flags.json && by == "user") {
    std::cout << json{{"since_ms", since_ms},
                      {"owners", (*answer)["owners"]},
                      {"ended", (*answer)["ended"]}}
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  try {
    UsageReport report;
    for (const json& r : (*answer)["ended"]) {
      // share_ms and energy_j: absent from an older service's answer.
      // cancelled and rated_*: absent from an older service's answer (its
      // solo-equivalent figures then count as unknown).
      report.ended.push_back({r.at("owner").get<std::string>(), r.at("jobs").get<int64_t>(),
                              r.at("failed").get<int64_t>(), r.at("gpu_ms").get<double>(),
                              r.at("solo_ms").get<double>(), r.value("share_ms", 0.0),
                              r.value("energy_j", 0.0), r.value("cancelled", int64_t{0}),
                              r.value("rated_gpu_ms", 0.0), r.value("rated_share_ms", 0.0)});
    }
    report.owners = owners_from_json((*answer)["owners"]);
    if (by == "group") report = usage_by_group(report, primary_group_of);
    if (flags.json) {
      json groups = json::object();
      for (const auto& [group, n] : report.owners) {
        groups[group] = {{"queued", n.queued},
                         {"running", n.running},
                         {"usage_ms", n.usage_ms},
                         {"total_ms", n.total_ms}};
      }
      std::cout << json{{"since_ms", since_ms},
                        {"groups", groups},
                        {"ended", usage_rows_to_json(report.ended, "group")}}
                       .dump(2)
                << "\n";
      return kExitOk;
    }
    std::cout << (csv ? usage_csv(report) : format_usage(report, "in the last " + since));
  } catch (const json::exception& e) {
    std::cerr << "colo: the service's usage answer is malformed: " << e.what() << "\n";
    return kExitEnvironment;
  }
  return kExitOk;
}

// `colo drain [--wait]` and `colo undrain`: the service stops (or starts
// again) starting queued jobs; with `wait`, returns once no job runs, saying
// how many still do as that changes.
int drain_command(bool drain, bool wait, const ClientFlags& flags) {
  std::optional<ServiceClient> client = connect(flags.socket);
  if (!client) return kExitEnvironment;
  SystemClock clock;
  int64_t shown = -1;
  while (true) {
    Result<json> answer = client->call(protocol::drain_request(drain));
    if (!answer.ok()) {
      std::cerr << "colo: " << answer.error().message() << "\n";
      return exit_code_of(answer.error());
    }
    const int64_t running = answer->value("running", int64_t{0});
    if (shown < 0 && !flags.json) {
      std::cout << (drain ? fmt::format("colo serve is drained: no queued job starts until `colo "
                                        "undrain`; {} run{} on\n",
                                        count_of(running, "job"), running == 1 ? "s" : "")
                          : "colo serve is undrained: queued jobs start again\n")
                << std::flush;
    }
    if (!drain || !wait || running == 0) {
      if (flags.json)
        std::cout << json{{"state", (*answer)["state"]}, {"running", running}} << "\n";
      return kExitOk;
    }
    if (running != shown && !flags.json)
      std::cout << fmt::format("waiting for {} to end\n", count_of(running, "running job"))
                << std::flush;
    shown = running;
    clock.sleep_for_ms(1000);
  }
}

// Job ids and ranges (12, 12-21, as colo submit prints them) read with
// common/target_syntax.h; where `submissions` is given, RUN/SUB and names go
// there (the service finds their jobs). An error names the target at fault.
Result<std::vector<int64_t>> job_targets(const std::vector<std::string>& texts,
                                         std::string_view command,
                                         std::vector<std::string>* submissions) {
  const TargetForms forms{.id = true,
                          .range = true,
                          .submission = submissions != nullptr,
                          .name = submissions != nullptr,
                          .id_noun = "job id",
                          .command = command};
  std::vector<int64_t> ids;
  for (const std::string& text : texts) {
    Result<Target> t = parse_target(text, forms);
    if (!t.ok()) return t.error();
    if (t->kind == Target::Kind::kId) {
      ids.push_back(t->first);
    } else if (t->kind == Target::Kind::kRange) {
      for (int64_t id = t->first; id <= t->last; ++id) ids.push_back(id);
    } else if (submissions != nullptr) {
      submissions->push_back(text);
    }
  }
  return ids;
}

int cancel_command(const std::vector<std::string>& targets, bool mine, const ClientFlags& flags) {
  std::vector<std::string> submissions;
  Result<std::vector<int64_t>> ids = job_targets(targets, "colo cancel", &submissions);
  if (!ids.ok()) {
    std::cerr << "colo: " << ids.error().message() << "\n";
    return kExitBadInput;
  }
  if (targets.empty() && !mine) {
    std::cerr
        << "colo: cancel needs jobs to cancel: "
        << describe_forms(TargetForms{
               .id = true, .range = true, .submission = true, .name = true, .id_noun = "job id"})
        << ", or --mine (every job of yours queued or running)\n";
    return kExitBadInput;
  }
  std::optional<ServiceClient> client = connect(flags.socket);
  if (!client) return kExitEnvironment;
  Result<json> answer = client->call(protocol::cancel_request(*ids, submissions, mine));
  if (!answer.ok()) {
    std::cerr << "colo: " << answer.error().message() << "\n";
    return exit_code_of(answer.error());
  }
  if ((*answer)["results"].empty() && !flags.json)
    std::cout << "no job of yours is queued or running: nothing to cancel\n";
  bool all = true;
  bool denied = false;  // a job or submission of another user's: exit 5
  for (const json& r : (*answer)["results"]) {
    all = all && r.value("ok", false);
    denied = denied || r.value(protocol::kPermissionDenied, false);
    if (!flags.json) {
      if (r.value("ok", false)) {
        std::cout << fmt::format("job {}: cancelling\n", r.value("id", int64_t{0}));
      } else {
        // The service's error names the job ("job 3 has already ended (ok)").
        std::cerr << "colo: " << r.value("error", "") << "\n";
      }
    }
  }
  if (flags.json) std::cout << json{{"results", (*answer)["results"]}}.dump() << "\n";
  return all ? kExitOk : denied ? kExitPermission : kExitJobsFailed;
}

// `colo logs JOB --run RUN`: the log of a job of `colo run`, read from the
// store (its row names the log's path); JOB is its name or its id. With
// `follow`, printed until the job's row says it ended.
int run_job_logs_command(int64_t run_id, const std::string& job, bool follow,
                         const std::string& db) {
  Result<std::unique_ptr<RunStore>> store = open_store_for_reading(db);
  if (!store.ok()) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  // The job, found once by name or id; then only its own row is read again.
  Result<std::vector<JobRow>> rows = (*store)->job_rows(run_id);
  if (!rows.ok()) {
    std::cerr << "colo: " << rows.error().message() << "\n";
    return kExitEnvironment;
  }
  std::optional<int64_t> job_id;
  for (const JobRow& r : *rows) {
    if (r.name == job || std::to_string(r.id) == job) job_id = r.id;  // the last attempt's
  }
  if (!job_id) {
    std::string names;
    for (size_t i = 0; i < rows->size() && i < 5; ++i)
      names += (i > 0 ? ", " : "") + (*rows)[i].name;
    std::cerr << fmt::format(
        "colo: run {} has no job named or numbered '{}'{}; `colo show {}` lists them\n", run_id,
        job,
        rows->empty() ? ""
                      : fmt::format(" (its jobs: {}{})", names, rows->size() > 5 ? ", ..." : ""),
        run_id);
    return kExitBadInput;
  }
  install(SIGPIPE, SIG_DFL);
  SystemClock clock;
  uint64_t offset = 0;
  std::string path;
  while (true) {
    Result<std::optional<JobRow>> read = (*store)->job_row(*job_id);
    if (!read.ok() || !*read) {
      std::cerr << "colo: "
                << (read.ok() ? fmt::format("job {} is no longer in the store", *job_id)
                              : read.error().message())
                << "\n";
      return kExitEnvironment;
    }
    const JobRow& row = **read;
    const bool ended = is_final(row.state);
    if (row.log_path.empty()) {
      if (!follow || ended) {
        std::cerr << fmt::format("colo: job {} of run {} has no log ({})\n", row.name, run_id,
                                 to_string(row.state));
        return ended ? kExitEnvironment : kExitOk;
      }
      clock.sleep_for_ms(500);
      continue;
    }
    if (row.log_path != path) {
      // A new attempt logs to a new file.
      if (!path.empty()) std::cout << fmt::format("---- colo: next attempt ({})\n", row.log_path);
      path = row.log_path;
      offset = 0;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::cerr << fmt::format("colo: cannot read {} (the log of job {} of run {})\n", path,
                               row.name, run_id);
      return kExitEnvironment;
    }
    in.seekg(static_cast<std::streamoff>(offset));
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cout << data << std::flush;
    offset += data.size();
    // Read after the state: what the job wrote before it ended is printed.
    if (!follow || ended) break;
    clock.sleep_for_ms(500);
  }
  return kExitOk;
}

int logs_command(const std::string& job, std::optional<int64_t> run_id, bool follow,
                 const std::string& db, const ClientFlags& flags) {
  if (run_id) return run_job_logs_command(*run_id, job, follow, db);
  int64_t id = 0;
  if (auto [end, ec] = std::from_chars(job.data(), job.data() + job.size(), id);
      ec != std::errc() || end != job.data() + job.size()) {
    std::cerr << fmt::format(
        "colo: '{}' is not a job id of colo serve; for a job of `colo run`, name its run: colo "
        "logs {} --run RUN\n",
        job, job);
    return kExitBadInput;
  }
  std::optional<ServiceClient> client = connect(flags.socket);
  if (!client) {
    std::cerr << "colo: for a job of `colo run`, name its run: colo logs JOB --run RUN\n";
    return kExitEnvironment;
  }
  install(SIGPIPE, SIG_DFL);
  SystemClock clock;
  uint64_t offset = 0;
  std::string path;
  while (true) {
    Result<json> answer = client->call(protocol::logs_request(id, offset));
    if (!answer.ok()) {
      std::cerr << "colo: " << answer.error().message() << "\n";
      return exit_code_of(answer.error());
    }
    const std::string now_path = answer->value("path", "");
    if (now_path != path && !path.empty()) {
      // A new attempt logs to a new file.
      std::cout << fmt::format("---- colo: attempt {} ({})\n", answer->value("attempts", 0),
                               now_path)
                << std::flush;
      offset = 0;
      path = now_path;
      continue;
    }
    path = now_path;
    const std::string data = answer->value("data", "");
    std::cout << data << std::flush;
    offset = answer->value("offset", offset);
    if (!data.empty()) continue;  // more may be there already
    if (!follow || answer->value("ended", false)) break;
    clock.sleep_for_ms(500);
  }
  return kExitOk;
}

int wait_command(const std::vector<std::string>& targets, const ClientFlags& flags) {
  Result<std::vector<int64_t>> read = job_targets(targets, "colo wait", nullptr);
  if (!read.ok()) {
    std::cerr << "colo: " << read.error().message() << "\n";
    return kExitBadInput;
  }
  const std::vector<int64_t>& ids = *read;
  std::optional<ServiceClient> client = connect(flags.socket);
  if (!client) return kExitEnvironment;
  SystemClock clock;
  FollowOptions follow;
  follow.print_progress = false;
  follow.notices = &std::cerr;  // stdout stays the jobs' lines (or --json)
  Result<FollowOutcome> outcome = follow_jobs(*client, ids, follow, clock, std::cout);
  if (!outcome.ok()) {
    std::cerr << "colo: " << outcome.error().message() << "\n";
    return kExitEnvironment;
  }
  if (outcome->jobs.size() < ids.size()) {
    std::cerr << fmt::format("colo: {} of the {} ids are not jobs of this service\n",
                             ids.size() - outcome->jobs.size(), ids.size());
  }
  if (flags.json) {
    json jobs = json::array();
    for (const QueueJob& j : outcome->jobs) jobs.push_back(to_json(j));
    std::cout << json{{"jobs", jobs}}.dump() << "\n";
  } else {
    for (const QueueJob& j : outcome->jobs) {
      std::cout << fmt::format("{} {}: {}{}\n", j.id, j.name, j.state,
                               j.reason.empty() || j.state == "ok" ? "" : ": " + j.reason);
    }
  }
  return outcome->not_ok == 0 && outcome->jobs.size() == ids.size() ? kExitOk : kExitJobsFailed;
}

}  // namespace

std::optional<int> run_through_service(const std::string& path, const std::string& socket,
                                       const RunLabel& label, const QosFlags& qos) {
  std::vector<std::string> candidates =
      socket.empty() ? service_socket_candidates() : std::vector<std::string>{socket};
  Result<ServiceClient> client = ServiceClient::find(candidates);
  if (!client.ok()) return std::nullopt;  // colo run runs the file itself
  Result<JobFile> file = load_job_file(path);
  if (!file.ok()) {
    std::cerr << "colo: " << file.error().message() << "\n";
    return kExitBadInput;
  }
  if (Status s = apply_qos_flags(qos, *file); !s.ok()) {
    std::cerr << "colo: " << s.error().message() << "\n";
    return kExitBadInput;
  }
  Result<json> answer = submit_file(*client, *file, std::nullopt, label);
  if (!answer.ok()) {
    std::cerr << "colo: " << answer.error().message() << "\n";
    return exit_code_of(answer.error());
  }
  std::vector<int64_t> ids = (*answer)["ids"];
  std::cout << fmt::format(
      "colo serve runs on this machine ({}): submitted {} ({}), following them. They keep "
      "running if this terminal closes (colo queue; colo logs ID); Ctrl-C cancels them.\n",
      client->path(), count_of(static_cast<int64_t>(ids.size()), "job"), id_ranges(ids));
  install_stop_handlers();
  install(SIGHUP, on_client_detach);
  install(SIGPIPE, SIG_IGN);
  SystemClock clock;
  FollowOptions follow;
  follow.stop_requests = &stop_requests();
  follow.detach_requests = &g_client_detach;
  Result<FollowOutcome> outcome = follow_jobs(*client, ids, follow, clock, std::cout);
  if (!outcome.ok()) {
    std::cerr << "colo: " << outcome.error().message() << "\n";
    return kExitEnvironment;
  }
  if (outcome->detached) {
    std::cerr << "colo: stopped following; the jobs keep running in colo serve (colo wait "
              << ids.front() << (ids.size() > 1 ? "..." : "") << ")\n";
    return outcome->cancelled ? kExitCancelled : kExitOk;
  }
  std::cout << fmt::format("{}: {} ok, {} not ok\n",
                           count_of(static_cast<int64_t>(outcome->jobs.size()), "job"), outcome->ok,
                           outcome->not_ok);
  if (outcome->cancelled) return kExitCancelled;
  return outcome->not_ok == 0 ? kExitOk : kExitJobsFailed;
}

void add_serve_commands(CLI::App& app, int& exit_code, const std::string& command_line) {
  static ServeFlags serve;
  static ClientFlags client;
  static std::string submit_file_path;
  static std::string submit_resume;
  static std::optional<int> submit_priority;
  static QosFlags submit_qos;
  static LabelFlags submit_label;
  static std::vector<std::string> job_texts;  // colo cancel, colo wait: targets as typed
  static bool cancel_mine = false;
  static std::string log_job;
  static std::optional<int64_t> log_run;
  static std::string log_db;
  static bool follow = false;
  static bool drain_wait = false;
  static std::string usage_since = "7d";
  static bool usage_as_csv = false;
  static std::string usage_by = "user";
  static QueuePage page;

  // For colo's own use: the client half of the multi-user MPS probe.
  static bool probe_hold = false;
  CLI::App* probe_cmd =
      app.add_subcommand("mps-probe-client", "(colo's own) one first piece of CUDA work")
          ->group("");
  probe_cmd->add_flag("--hold", probe_hold, "keep the context until stdin ends");
  probe_cmd->callback([&exit_code] { exit_code = run_mps_probe_client(probe_hold); });

  CLI::App* serve_cmd = app.add_subcommand(
      "serve",
      "Run the service that owns this machine's GPUs: jobs submitted at any time (colo submit), "
      "queued in the store, placed by the auto policy (see docs/serve.md)");
  add_backend_flags(*serve_cmd, serve.backend);
  serve_cmd
      ->add_option("--mechanism,-m", serve.mechanism,
                   "exclusive, naive or mps (mig is for colo run); default: mps where available, "
                   "else naive")
      ->check(CLI::IsMember({"exclusive", "naive", "mps", "mig"}));
  serve_cmd
      ->add_option("--mps-users", serve.mps_users,
                   "under mps, whether every user's jobs share one multi-user MPS server "
                   "(shared: needs root and a driver with -M) or each user gets a daemon "
                   "whose server takes turns with the others' (separate); auto: shared "
                   "where it can be had")
      ->check(CLI::IsMember({"auto", "shared", "separate"}))
      ->capture_default_str();
  serve_cmd->add_option("--policy", serve.policy, "auto or fixed (see docs/policy.md)")
      ->check(CLI::IsMember({"fixed", "auto"}))
      ->capture_default_str();
  serve_cmd
      ->add_option("--gpus", serve.gpus, "own only these GPUs (indices as colo devices lists them)")
      ->delimiter(',')
      ->check(gpu_index());
  serve_cmd->add_option("--db", serve.db,
                        "run store (holds the queue); default " + default_db_path());
  serve_cmd->add_option("--logs", serve.logs,
                        "job logs and checkpoint directories; default <state dir>/serve");
  serve_cmd->add_option("--socket", serve.socket,
                        "the Unix socket clients use; default $COLO_SOCKET, else <state "
                        "dir>/colo.sock");
  serve_cmd->add_option("--socket-group", serve.socket_group,
                        "group of the socket (mode 0660): its members may submit jobs");
  serve_cmd->add_option("--admin-group", serve.admin_group,
                        "members of this group may cancel anyone's jobs (root always may)");
  serve_cmd
      ->add_option("--queue-order", serve.queue_order,
                   "fair-share: the next job comes from the user with the least recent usage "
                   "(charged GPU time over weight), first come first served within a "
                   "user; fcfs: first come, first served across users (both within priorities)")
      ->check(CLI::IsMember({"fair-share", "fcfs"}))
      ->capture_default_str();
  serve_cmd
      ->add_option("--fair-share-half-life", serve.fair_share_half_life,
                   "fair share: a user's usage (charged GPU time) counts half after "
                   "this long (docs/serve.md, Fair share)")
      ->capture_default_str();
  serve_cmd->add_option("--fair-share-weight", serve.fair_share_weights,
                        "USER=W or @GROUP=W, repeatable: that user (or each member of that "
                        "group) is owed W times the GPU time of a user of weight 1 (default 1)");
  serve_cmd
      ->add_option("--samples-full-for", serve.samples_full_for,
                   "GPU samples are kept at the sampling rate for this long, then thinned "
                   "(docs/serve.md, Sample retention)")
      ->capture_default_str();
  serve_cmd
      ->add_option("--samples-thinned-to", serve.samples_thinned_to,
                   "older samples: one per GPU and process every this long; 0 keeps them all")
      ->capture_default_str();
  serve_cmd->add_option("--max-per-gpu", serve.max_per_gpu, "at most this many jobs on one GPU")
      ->check(whole_number(1));
  serve_cmd
      ->add_option("--max-jobs-per-user", serve.max_jobs_per_user,
                   "jobs one user may have queued or running; submissions past it are refused")
      ->check(whole_number(1))
      ->capture_default_str();
  serve_cmd->add_option(
      "--preempt-after", serve.preempt_after,
      "preemption: a queued job that waited this long may stop a running preemptible job of "
      "lower priority (TERM, then --grace to checkpoint; it runs again later, not counted); "
      "default: never (docs/serve.md, Preemption)");
  serve_cmd
      ->add_option("--max-gpus-per-user", serve.max_gpus_per_user,
                   "quota: at most this many GPUs' worth of one user's jobs run at once (a job "
                   "counts its share of each GPU: one over the jobs there); the rest wait, "
                   "saying so in colo queue (default: none)")
      ->check(CLI::PositiveNumber);
  serve_cmd
      ->add_option("--max-protected-gpus-per-user", serve.max_protected_gpus_per_user,
                   "quota: at most this many GPUs held by one user's protected jobs at once (a "
                   "protected job keeps its GPU from normal jobs); more of theirs wait, saying so "
                   "in colo queue (default: none; docs/serve.md, What protection costs)")
      ->check(whole_number(1));
  serve_cmd
      ->add_option("--max-protected-gpus-per-group", serve.max_protected_gpus_per_group,
                   "quota: at most this many GPUs held by the protected jobs of the members of "
                   "one primary group together; more of theirs wait (default: none)")
      ->check(whole_number(1));
  serve_cmd->add_option("--max-gpus-for", serve.max_gpus_for,
                        "USER=N or @GROUP=N, repeatable: at most N GPUs' worth of that user's "
                        "jobs at once (in place of --max-gpus-per-user), or of that group's "
                        "members' together (docs/serve.md, Quotas)");
  serve_cmd->add_option("--max-jobs-for", serve.max_jobs_for,
                        "USER=M or @GROUP=M, repeatable: at most M of that user's jobs queued or "
                        "running (in place of --max-jobs-per-user), or of that group's members' "
                        "together; submissions past it are refused");
  serve_cmd->add_option("--job-host-memory", serve.job_host_memory,
                        "host memory limit (cgroup memory.max) of jobs that set no host_memory, "
                        "e.g. 32GiB; a job over it is killed and recorded as such");
  serve_cmd
      ->add_option("--job-cpus", serve.job_cpus,
                   "CPU limit (cgroup cpu.max, whole CPUs) of jobs that set no cpus")
      ->check(whole_number(1));
  serve_cmd->add_option("--sample-period", serve.sample_period, "GPU sampling period")
      ->capture_default_str();
  serve_cmd->add_option("--grace", serve.grace, "time between TERM and KILL when stopping jobs")
      ->capture_default_str();
  serve_cmd->add_option("--stall-timeout", serve.stall_timeout, kStallTimeoutHelp);
  add_disk_flags(*serve_cmd, serve.disk);
  serve_cmd
      ->add_option("--on-sigterm", serve.on_sigterm,
                   "stop: stop the running jobs (they run again at the next start, per their "
                   "restart key); drain: start no new job and wait for the running ones (SIGTERM "
                   "again stops them)")
      ->check(CLI::IsMember({"stop", "drain"}))
      ->capture_default_str();
  serve_cmd->add_option("--lock-dir", serve.lock_dir,
                        "machine-wide GPU lock directory; default $COLO_LOCK_DIR, else "
                        "/run/colo/locks or /tmp/colo-locks (simulated GPUs: "
                        "$COLO_HOME/sim-locks)");
  serve_cmd->add_flag("--no-wait", serve.no_wait,
                      "refuse to start when another colo holds a GPU, instead of waiting");
  serve_cmd->add_option("--http", serve.http,
                        "serve the read-only JSON API, Prometheus /metrics and the dashboard "
                        "(/dashboard/) on ADDR:PORT "
                        "(127.0.0.1:8470; port 0 picks one); off by default");
  serve_cmd->add_flag("--http-logs", serve.http_logs,
                      "include job log tails in /api/jobs/ID, and serve profiling traces "
                      "(anyone who reaches --http reads them; the socket lets users read only "
                      "their own logs)");
  set_example(*serve_cmd, "colo serve --backend sim --mechanism naive --http 127.0.0.1:8470");
  serve_cmd->callback(
      [&exit_code, command_line] { exit_code = serve_command(serve, command_line); });

  auto add_client_flags = [](CLI::App* cmd, bool with_json) {
    cmd->add_option("--socket", client.socket,
                    "the service's socket; default $COLO_SOCKET, else <state dir>/colo.sock, "
                    "then /var/lib/colo/colo.sock");
    if (with_json) cmd->add_flag("--json", client.json, "machine-readable output (docs/serve.md)");
  };

  CLI::App* submit_cmd =
      app.add_subcommand("submit",
                         "Queue the jobs of a job file in colo serve (or, with --resume, those of "
                         "an earlier submission that did not end ok); prints their ids");
  submit_cmd->add_option("file", submit_file_path, "job file (see docs/job-file.md)")
      ->check(CLI::ExistingFile);
  submit_cmd->add_option(
      "--resume", submit_resume,
      "instead of a job file: queue again the jobs of this earlier submission (RUN/ID, as colo "
      "submit printed it, or its name) that did not end ok, each with its checkpoint directory");
  submit_cmd
      ->add_option("--priority", submit_priority,
                   "every job's priority, over the file's: higher starts first (-100 to 100; "
                   "above 0 only for the service's admins; docs/serve.md, Fair share)")
      ->check(CLI::Range(kMinJobPriority, kMaxJobPriority));
  add_qos_flags(*submit_cmd, submit_qos);
  add_client_flags(submit_cmd, true);
  add_label_flags(*submit_cmd, submit_label);
  set_example(*submit_cmd, "colo submit examples/quickstart.toml --name lr-a --json");
  submit_cmd->callback([&exit_code] {
    exit_code = submit_command(submit_file_path, submit_resume, submit_priority, submit_qos,
                               submit_label, client);
  });

  CLI::App* queue_cmd = app.add_subcommand(
      "queue", "Show colo serve's GPUs and jobs: owner, state, mechanism, epoch, rate, end");
  add_client_flags(queue_cmd, true);
  queue_cmd
      ->add_option("--offset", page.offset,
                   "show queued jobs from this one on (0: the first); running jobs and the "
                   "counts per owner are always shown")
      ->check(CLI::NonNegativeNumber);
  queue_cmd->add_option("--limit", page.limit, "show at most this many queued jobs")
      ->check(CLI::Range(int64_t{1}, protocol::kMaxQueuedPage))
      ->capture_default_str();
  set_example(*queue_cmd, "colo queue --json --offset 500 --limit 500");
  queue_cmd->callback([&exit_code] { exit_code = queue_command(client, page); });

  CLI::App* usage_cmd = app.add_subcommand(
      "usage", "Show who used colo serve's GPUs: each user's charged GPU time and weight");
  usage_cmd
      ->add_option("--since", usage_since,
                   "the second table: jobs that ended in this span (a duration: 7d, 12h)")
      ->capture_default_str();
  usage_cmd->add_flag("--csv", usage_as_csv,
                      "one row per user as CSV (usage lately and in all, jobs, and the ended "
                      "jobs' counts and times in ms)");
  usage_cmd
      ->add_option("--by", usage_by,
                   "user: one row per user; group: the users' figures summed per primary group")
      ->check(CLI::IsMember({"user", "group"}))
      ->capture_default_str();
  add_client_flags(usage_cmd, true);
  set_example(*usage_cmd, "colo usage --since 30d --csv > usage.csv");
  usage_cmd->callback(
      [&exit_code] { exit_code = usage_command(client, usage_since, usage_as_csv, usage_by); });

  CLI::App* cancel_cmd = app.add_subcommand("cancel", "Cancel jobs of colo serve (your own)");
  cancel_cmd->add_option("targets", job_texts,
                         "job ids, ranges of them (12-21, as colo submit prints them), and "
                         "submissions: RUN/SUB or a submission's name (its jobs not yet ended)");
  cancel_cmd->add_flag("--mine", cancel_mine, "every job of yours queued or running");
  add_client_flags(cancel_cmd, true);
  set_example(*cancel_cmd, "colo cancel 12-21 3/7; colo cancel --mine");
  cancel_cmd->callback(
      [&exit_code] { exit_code = cancel_command(job_texts, cancel_mine, client); });

  CLI::App* drain_cmd = app.add_subcommand(
      "drain",
      "Stop colo serve starting queued jobs (admins only): running jobs run on, submissions "
      "still queue, until `colo undrain`; for maintenance: `colo drain --wait && systemctl stop "
      "colo`");
  drain_cmd->add_flag("--wait", drain_wait, "return once no job runs, saying how many still do");
  add_client_flags(drain_cmd, true);
  set_example(*drain_cmd, "colo drain --wait && systemctl stop colo");
  drain_cmd->callback([&exit_code] { exit_code = drain_command(true, drain_wait, client); });
  CLI::App* undrain_cmd =
      app.add_subcommand("undrain", "Let colo serve start queued jobs again (admins only)");
  add_client_flags(undrain_cmd, true);
  set_example(*undrain_cmd, "colo undrain");
  undrain_cmd->callback([&exit_code] { exit_code = drain_command(false, false, client); });

  CLI::App* logs_cmd = app.add_subcommand(
      "logs", "Print a job's log (its latest attempt): of colo serve, or of a run of colo run");
  logs_cmd->add_option("job", log_job, "a job id of colo serve; with --run, a job's name or id")
      ->required();
  logs_cmd->add_option("--run", log_run,
                       "a run of `colo run` (colo runs lists them): the job is one of its jobs, "
                       "read from the store");
  logs_cmd->add_option("--db", log_db, "with --run: the run store (default: colo's own)");
  logs_cmd->add_flag("--follow,-f", follow, "keep printing until the job ends");
  add_client_flags(logs_cmd, false);
  set_example(*logs_cmd, "colo logs 12 --follow; colo logs train-3 --run 7");
  logs_cmd->callback(
      [&exit_code] { exit_code = logs_command(log_job, log_run, follow, log_db, client); });

  CLI::App* wait_cmd = app.add_subcommand(
      "wait", "Wait until jobs of colo serve have ended; exit 0 when all ended ok");
  wait_cmd->add_option("ids", job_texts, "job ids, and ranges of them (12-21)")->required();
  add_client_flags(wait_cmd, true);
  set_example(*wait_cmd, "colo wait 12-21 && echo all ok");
  wait_cmd->callback([&exit_code] { exit_code = wait_command(job_texts, client); });
}

}  // namespace colo
