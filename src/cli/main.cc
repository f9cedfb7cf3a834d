// colo: runs deep-learning training jobs collocated on NVIDIA GPUs.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "colo: run training jobs collocated on NVIDIA GPUs (exclusive, naive sharing, MPS), "
      "watch the GPU, and keep every result in a SQLite store."};
  app.require_subcommand(1);
  // A reader that goes away (`colo run ... | head -1`) must not end a run:
  // writes to it fail instead (EPIPE) and colo carries on. Jobs get the
  // default disposition back before exec.
  signal(SIGPIPE, SIG_IGN);
  int exit_code = colo::kExitOk;
  std::string command_line = "colo";
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
  colo::add_commands(app, exit_code, command_line);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : colo::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "colo: internal error: " << e.what() << "\n";
    return colo::kExitEnvironment;
  }
  return exit_code;
}
