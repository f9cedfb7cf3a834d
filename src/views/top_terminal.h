// The terminal side of `colo top`: ncurses draws render_top()'s lines and
// reads keys for handle_key(); nothing else happens here. Where ncurses
// cannot drive the output (not a terminal, TERM unset or dumb, no terminfo
// entry), print_top_once() writes the screen once as plain text.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>

#include "common/clock.h"
#include "common/result.h"
#include "views/top_source.h"

namespace colo {

struct TopOptions {
  int64_t interval_ms = 1000;  // between reads of the source
};

// True when stdout and stdin are terminals and TERM names one ncurses can drive.
bool can_run_full_screen();

// Runs the full-screen view until `q` or a stop request (Ctrl-C). An error
// when the terminal cannot be set up (the caller then prints once).
Status run_top_terminal(TopSource& source, const TopOptions& options, Clock& clock,
                        const std::atomic<int>& stop_requests);

// One screen as plain text, `width` columns wide, every GPU process and job
// shown (no height limit).
void print_top_once(TopSource& source, int width, Clock& clock, std::ostream& out);

}  // namespace colo
