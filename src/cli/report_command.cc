// `colo report [TARGET...] --out DIR`: the HTML report, figure pages, PNGs,
// CSV and text summary of a run, an experiment, or several experiments as one
// (see report/report_writer.h).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
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
  bool json = false;
  bool force = false;
};

// The file that marks a directory as a colo report, so that a later `colo
// report --out` may overwrite it.
constexpr const char* kReportMarker = ".colo-report";

// Whether `dir` may be written into: absent, empty, or a report colo wrote
// (its marker, or the index.html and summary.txt of an older colo's).
bool is_colos_to_overwrite(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  if (fs::is_directory(dir, ec) && fs::is_empty(dir, ec)) return true;
  const fs::path d(dir);
  return fs::exists(d / kReportMarker, ec) ||
         (fs::exists(d / "index.html", ec) && fs::exists(d / "summary.txt", ec));
}

int report_command(const ReportFlags& flags) {
  Result<std::unique_ptr<RunStore>> store = open_store_for_reading(flags.db);
  if (!store) {
    std::cerr << "colo: " << store.error().message() << "\n";
    return kExitEnvironment;
  }
  std::vector<ReportTarget> targets;
  for (const std::string& text : flags.targets) {
    Result<ReportTarget> target = parse_report_target(text);
    if (!target) {
      // The name of a run of the caller's own (colo run --name, colo label).
      Result<std::optional<NamedTarget>> named =
          (*store)->find_named(text, getuid(), NameKinds::kRuns);
      if (!named || !*named) {
        std::cerr << "colo: " << (named ? target.error() : named.error()).message() << "\n";
        return kExitBadInput;
      }
      target = ReportTarget{ReportTarget::Kind::kRun, (*named)->id};
    }
    targets.push_back(*target);
  }
  if (!flags.force && !is_colos_to_overwrite(flags.out)) {
    std::cerr << fmt::format(
        "colo: --out {} is a directory colo did not write (no {} in it): choose another, or pass "
        "--force to write into it anyway\n",
        flags.out, kReportMarker);
    return kExitBadInput;
  }
  if (Status made = make_dirs(flags.out); !made.ok()) {
    std::cerr << "colo: " << made.error().message() << "\n";
    return kExitEnvironment;
  }
  std::ofstream(flags.out + "/" + kReportMarker)
      << "written by colo report; colo report --out may overwrite this directory\n";
  ReportOptions options;
  options.out_dir = flags.out;
  options.png = !flags.no_png;
  ProgressLine progress("colo: report: ");
  options.progress = [&progress](const std::string& step) { progress.show(step); };
  Result<ReportOutcome> outcome = write_report(**store, targets, options);
  progress.clear();
  if (!outcome) {
    std::cerr << "colo: " << outcome.error().message() << "\n";
    return kExitEnvironment;
  }
  if (flags.json) {
    nlohmann::json out = {
        {"description", outcome->description},
        {"out_dir", flags.out},
        {"index_html", outcome->files.index_html},
        {"summary_txt", outcome->files.summary_txt},
        {"csv_files", outcome->files.csv_files},
        {"figure_pages", outcome->files.figure_pages},
        {"png_files", outcome->pngs},
        {"png_note",
         outcome->png_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(outcome->png_note)}};
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("report of {} written to {}\n", outcome->description, flags.out);
  std::cout << fmt::format("  open in a browser:  {}\n", outcome->files.index_html);
  std::cout << fmt::format("  text summary:       {}\n", outcome->files.summary_txt);
  // "report/" and "report" alike: one slash before each folder.
  const auto folder = [&](const char* name) {
    return (std::filesystem::path(flags.out) / name / "").string();
  };
  std::cout << fmt::format("  CSV ({} files):     {}\n", outcome->files.csv_files.size(),
                           folder("csv"));
  std::cout << fmt::format("  figure pages ({}):  {}\n", outcome->files.figure_pages.size(),
                           folder("figures"));
  if (outcome->png_note.empty()) {
    std::cout << fmt::format("  PNG figures ({}):   {}\n", outcome->pngs.size(), folder("png"));
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
      "run, of two runs compared, or of experiments");
  cmd->add_option("targets", flags.targets,
                  "run:ID, exp:ID, a bare number (a run id), a run's name, last-run, last-exp, or "
                  "last (the run colo show shows, or the experiment it was a case of; the "
                  "default); two runs make a report comparing them (as colo show A B), several "
                  "exp:ID one report over those experiments");
  cmd->add_option("--out,-o", flags.out, "directory to write the report into (created)")
      ->required();
  cmd->add_option("--db", flags.db, "run store; default " + default_db_path());
  cmd->add_flag("--no-png", flags.no_png, "skip the PNG figures (they need chromium)");
  cmd->add_flag("--force", flags.force,
                "write into --out even when it is a directory colo did not write");
  cmd->add_flag("--json", flags.json, "say what was written as JSON (docs/cli.md)");
  set_example(*cmd, "colo report last --out report/ && xdg-open report/index.html");
  cmd->callback([&exit_code] { exit_code = report_command(flags); });
}

}  // namespace colo
