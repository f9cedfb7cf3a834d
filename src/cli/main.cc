// colo: runs deep-learning training jobs collocated on NVIDIA GPUs.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "colo: run training jobs collocated on NVIDIA GPUs (exclusive, naive sharing, MPS, MIG), "
      "watch the GPU, and keep every result in a SQLite store."};
  app.name("colo");
  app.require_subcommand(1);
  app.set_version_flag("--version", colo::version_line());
  // A reader that goes away (`colo run ... | head -1`) must not end a run:
  // writes to it fail instead (EPIPE) and colo carries on. Jobs get the
  // default disposition back before exec.
  signal(SIGPIPE, SIG_IGN);
  int exit_code = colo::kExitOk;
  std::string command_line = "colo";
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
  colo::add_commands(app, exit_code, command_line);
  // After the subcommands, which would otherwise inherit it.
  app.footer(colo::top_level_footer());
  if (argc == 1) {
    std::cout << app.help();
    return colo::kExitOk;
  }
  if (std::optional<std::string> unknown =
          colo::unknown_command(app, std::vector<std::string>(argv + 1, argv + argc))) {
    std::cerr << *unknown << "\n";
    return colo::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    if (std::optional<std::string> unknown = colo::unknown_options(app)) {
      std::cerr << *unknown << "\n";
      return colo::kExitBadInput;
    }
    std::cerr << colo::parse_error_line(app, e.what()) << "\n";
    return colo::kExitBadInput;
  } catch (const CLI::ParseError& e) {
    // --help and --version end here too (exit code 0).
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << colo::parse_error_line(app, e.what()) << "\n";
    return colo::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "colo: internal error: " << e.what() << "\n";
    return colo::kExitEnvironment;
  }
  return exit_code;
}
