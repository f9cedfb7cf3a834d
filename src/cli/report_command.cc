// `colo report [TARGET...] --out DIR`: the HTML report, figure pages, PNGs,
// CSV and text summary of a run, an experiment, or several experiments as one
// (see report/report_writer.h).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "common/paths.h"
#include "report/report_writer.h"

namespace colo {
namespace {

struct ReportFlags {
  std::vector<std::string> targets;
  std::string out;
  std::string db;
  bool no_png = false;
};

int report_command(const ReportFlags& flags) {
  std::vector<ReportTarget> targets;
  for (const std::string& text : flags.targets) {
    Result<ReportTarget> target = parse_report_target(text);
    if (!target) {
      std::cerr << "colo: " << target.error().message() << "\n";
      return kExitBadInput;
    }
    targets.push_back(*target);
  }
  Result<std::unique_ptr<RunStore>> store = open_store_for_reading(flags.db);
  if (!store) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  ReportOptions options;
  options.out_dir = flags.out;
  options.png = !flags.no_png;
  Result<ReportOutcome> outcome = write_report(**store, targets, options);
  if (!outcome) {
    std::cerr << "colo: " << outcome.error().message() << "\n";
    return kExitEnvironment;
  }
  std::cout << fmt::format("report of {} written to {}\n", outcome->description, flags.out);
  std::cout << fmt::format("  open in a browser:  {}\n", outcome->files.index_html);
  std::cout << fmt::format("  text summary:       {}\n", outcome->files.summary_txt);
  std::cout << fmt::format("  CSV ({} files):     {}/csv/\n", outcome->files.csv_files.size(),
                           flags.out);
  std::cout << fmt::format("  figure pages ({}):  {}/figures/\n",
                           outcome->files.figure_pages.size(), flags.out);
  if (outcome->png_note.empty()) {
    std::cout << fmt::format("  PNG figures ({}):   {}/png/\n", outcome->pngs.size(), flags.out);
  } else {
    std::cout << "  " << outcome->png_note << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  // Flags live as long as the app: CLI11 writes into them during parse().
  static ReportFlags flags;
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write an HTML report (charts of the paper's figures), PNGs, CSV and a text summary of a "
      "run or experiment");
  cmd->add_option("targets", flags.targets,
                  "run:ID, exp:ID, a bare number (a run id), last-run, last-exp, or last (the "
                  "most recent experiment, else the most recent run; the default); several "
                  "exp:ID make one report over those experiments");
  cmd->add_option("--out,-o", flags.out, "directory to write the report into (created)")
      ->required();
  cmd->add_option("--db", flags.db, "run store; default " + default_db_path());
  cmd->add_flag("--no-png", flags.no_png, "skip the PNG figures (they need chromium)");
  cmd->callback([&exit_code] { exit_code = report_command(flags); });
}

}  // namespace colo
