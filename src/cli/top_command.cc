// `colo top`: the GPUs and colo serve's jobs, live, in the terminal.
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "serve/client.h"
#include "views/top_terminal.h"

namespace colo {
namespace {

struct TopFlags {
  BackendFlags backend;
  std::string socket;
  bool local = false;
  bool once = false;
  std::string interval = "1s";
  int width = 0;
};

// --width, else $COLUMNS, else the terminal's width, else 120.
int output_width(int flag) {
  if (flag > 0) return flag;
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr && std::atoi(columns) > 0)
    return std::atoi(columns);
  struct winsize size {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 120;
}

int top_command(const TopFlags& flags) {
  std::optional<int64_t> interval = duration_flag("--interval", flags.interval, 200);
  if (!interval) return kExitBadInput;
  SystemClock clock;
  std::unique_ptr<TopSource> source;
  std::unique_ptr<GpuBackend> backend;  // outlives the local source
  if (!flags.local) {
    std::vector<std::string> candidates =
        flags.socket.empty() ? service_socket_candidates() : std::vector<std::string>{flags.socket};
    if (Result<ServiceClient> client = ServiceClient::find(candidates); client.ok()) {
      source = std::make_unique<ServiceTopSource>(std::move(client).value());
    } else if (!flags.socket.empty()) {
      std::cerr << fmt::format("colo: {}\n", client.error().message());
      return kExitEnvironment;
    }
  }
  if (!source) {
    Result<OpenedGpu> gpu = open_gpu(flags.backend, clock);
    if (!gpu.ok()) {
      std::cerr << "colo: " << gpu.error().message() << "\n";
      return kExitEnvironment;
    }
    backend = std::move(gpu->backend);
    auto local = std::make_unique<LocalTopSource>(*backend, gpu->devices, clock);
    // GPM metrics average over two samples: take the first one now.
    (void)local->read();
    clock.sleep_for_ms(250);
    source = std::move(local);
  }
  if (!flags.once && can_run_full_screen()) {
    install_stop_handlers();
    TopOptions options;
    options.interval_ms = *interval;
    Status s = run_top_terminal(*source, options, clock, stop_requests());
    if (s.ok()) return kExitOk;
    std::cerr << "colo: " << s.error().message() << "\n";
  }
  print_top_once(*source, output_width(flags.width), clock, std::cout);
  return kExitOk;
}

}  // namespace

void add_top_command(CLI::App& app, int& exit_code) {
  static TopFlags flags;
  CLI::App* cmd = app.add_subcommand(
      "top",
      "Watch the GPUs and colo serve's jobs live (like nvitop): bars, MPS clients one by one, "
      "jobs; sort, filter, follow a log, cancel your jobs. Without a service: this machine's GPUs");
  cmd->add_option("--socket", flags.socket,
                  "the colo serve to watch; default $COLO_SOCKET, else <state dir>/colo.sock, "
                  "then /var/lib/colo/colo.sock");
  cmd->add_flag("--local", flags.local,
                "read this machine's GPUs directly even when a colo serve runs");
  add_backend_flags(*cmd, flags.backend);
  cmd->add_option("--interval,-i", flags.interval, "time between refreshes")->capture_default_str();
  cmd->add_flag("--once", flags.once,
                "print one screen as text and exit (also when the output is not a terminal, or "
                "TERM is dumb)");
  cmd->add_option("--width", flags.width, "columns of the text --once prints; default: $COLUMNS")
      ->check(CLI::Range(40, 1000));
  set_example(*cmd, "colo top --once --width 120");
  cmd->callback([&exit_code] { exit_code = top_command(flags); });
}

}  // namespace colo
