#include "run/live_display.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "common/units.h"

namespace colo {
namespace {

// Tables taller than this show running jobs and a count of the others.
constexpr size_t kMaxRows = 40;

std::string format_rate(double per_s) {
  if (per_s >= 1e6) return fmt::format("{:.1f}M/s", per_s / 1e6);
  if (per_s >= 1e4) return fmt::format("{:.1f}k/s", per_s / 1e3);
  return fmt::format("{:.0f}/s", per_s);
}

}  // namespace

std::string format_job_line(const JobLine& job, size_t name_width) {
  std::string line = fmt::format("{:<{}}  {:<9} {:<5} {:>7}", job.name, name_width, job.state,
                                 job.device ? fmt::format("gpu{}", *job.device) : "-",
                                 job.state == "queued" ? "" : format_duration_ms(job.elapsed_ms));
  if (job.epochs > 0) line += fmt::format("  epoch {}", job.epochs);
  if (job.last_epoch_ms) line += fmt::format("  {}/epoch", format_duration_ms(*job.last_epoch_ms));
  if (job.samples_per_s) line += "  " + format_rate(*job.samples_per_s);
  if (!job.note.empty()) line += "  " + job.note;
  return line;
}

void LiveDisplay::event(const std::string& line) {
  erase_table();
  out_ << line << '\n';
  out_.flush();
}

void LiveDisplay::erase_table() {
  if (!in_place_ || drawn_lines_ == 0) return;
  // Cursor up to the table's first line, then clear to the end of the screen.
  out_ << fmt::format("\x1b[{}F\x1b[J", drawn_lines_);
  drawn_lines_ = 0;
}

void LiveDisplay::redraw(const std::string& header, const std::vector<JobLine>& jobs) {
  if (!in_place_) return;
  erase_table();
  size_t width = 4;
  for (const JobLine& j : jobs) width = std::max(width, j.name.size());
  width = std::min<size_t>(width, 40);
  std::vector<const JobLine*> shown;
  for (const JobLine& j : jobs) {
    if (jobs.size() <= kMaxRows || j.state == "running") shown.push_back(&j);
  }
  out_ << header << '\n';
  int lines = 1;
  for (size_t i = 0; i < shown.size() && i < kMaxRows; ++i) {
    out_ << "  " << format_job_line(*shown[i], width) << '\n';
    ++lines;
  }
  if (shown.size() < jobs.size()) {
    out_ << fmt::format("  ... and {} more jobs not running\n", jobs.size() - shown.size());
    ++lines;
  }
  out_.flush();
  drawn_lines_ = lines;
}

void LiveDisplay::finish() { drawn_lines_ = 0; }

}  // namespace colo
