#include "views/top_terminal.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>

// Last: curses defines macros with common names (move, erase, timeout, OK).
#include <curses.h>

namespace colo {
namespace {

enum Pair : short { kPairLow = 1, kPairMid, kPairHigh, kPairHeader, kPairSelected, kPairGood };

int attribute_of(TopStyle style, bool colors) {
  switch (style) {
    case TopStyle::kNormal:
      return A_NORMAL;
    case TopStyle::kDim:
      return A_DIM;
    case TopStyle::kBold:
      return A_BOLD;
    case TopStyle::kHeader:
      return colors ? COLOR_PAIR(kPairHeader) | A_BOLD : A_BOLD;
    case TopStyle::kSelected:
      return colors ? COLOR_PAIR(kPairSelected) : A_REVERSE;
    case TopStyle::kBarLow:
      return colors ? COLOR_PAIR(kPairLow) | A_BOLD : A_NORMAL;
    case TopStyle::kBarMid:
      return colors ? COLOR_PAIR(kPairMid) | A_BOLD : A_BOLD;
    case TopStyle::kBarHigh:
    case TopStyle::kBad:
      return colors ? COLOR_PAIR(kPairHigh) | A_BOLD : A_BOLD;
    case TopStyle::kGood:
      return colors ? COLOR_PAIR(kPairGood) : A_NORMAL;
    case TopStyle::kNote:
      return A_BOLD;
  }
  return A_NORMAL;
}

int translate_key(int key) {
  switch (key) {
    case KEY_UP:
      return kTopKeyUp;
    case KEY_DOWN:
      return kTopKeyDown;
    case KEY_PPAGE:
      return kTopKeyPageUp;
    case KEY_NPAGE:
      return kTopKeyPageDown;
    case KEY_HOME:
      return kTopKeyHome;
    case KEY_END:
      return kTopKeyEnd;
    case KEY_ENTER:
    case '\n':
    case '\r':
      return kTopKeyEnter;
    case 27:
      return kTopKeyEscape;
    case KEY_BACKSPACE:
    case 127:
    case 8:
      return kTopKeyBackspace;
    default:
      return key;
  }
}

void draw(const std::vector<TopLine>& lines, bool colors) {
  erase();
  int y = 0;
  for (const TopLine& line : lines) {
    move(y++, 0);
    for (const TopSpan& span : line) {
      const int attr = attribute_of(span.style, colors);
      attron(attr);
      addnstr(span.text.c_str(), static_cast<int>(span.text.size()));
      attroff(attr);
    }
  }
  refresh();
}

// Restores the terminal on every way out.
class CursesSession {
 public:
  static Result<std::unique_ptr<CursesSession>> open() {
    SCREEN* screen = newterm(nullptr, stdout, stdin);
    if (screen == nullptr) {
      const char* term = std::getenv("TERM");
      return Error(fmt_term(term));
    }
    return std::unique_ptr<CursesSession>(
        new CursesSession(screen));  // NOLINT(modernize-make-unique)
  }
  ~CursesSession() {
    endwin();
    delscreen(screen_);
  }
  CursesSession(const CursesSession&) = delete;
  CursesSession& operator=(const CursesSession&) = delete;
  bool colors() const { return colors_; }

 private:
  explicit CursesSession(SCREEN* screen) : screen_(screen) {
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    if (has_colors()) {
      start_color();
      use_default_colors();
      init_pair(kPairLow, COLOR_GREEN, -1);
      init_pair(kPairMid, COLOR_YELLOW, -1);
      init_pair(kPairHigh, COLOR_RED, -1);
      init_pair(kPairHeader, COLOR_CYAN, -1);
      init_pair(kPairSelected, COLOR_BLACK, COLOR_CYAN);
      init_pair(kPairGood, COLOR_GREEN, -1);
      colors_ = true;
    }
  }
  static std::string fmt_term(const char* term) {
    return std::string("the terminal '") + (term != nullptr ? term : "") +
           "' cannot be driven full screen (no terminfo entry); printing once instead";
  }
  SCREEN* screen_;
  bool colors_ = false;
};

}  // namespace

bool can_run_full_screen() {
  const char* term = std::getenv("TERM");
  if (term == nullptr || *term == '\0' || std::strcmp(term, "dumb") == 0) return false;
  return isatty(STDOUT_FILENO) == 1 && isatty(STDIN_FILENO) == 1;
}

Status run_top_terminal(TopSource& source, const TopOptions& options, Clock& clock,
                        const std::atomic<int>& stop_requests) {
  Result<std::unique_ptr<CursesSession>> session = CursesSession::open();
  if (!session.ok()) return session.error();
  TopState state;
  TopInput input = source.read();
  int64_t next_read = clock.monotonic_ms() + options.interval_ms;
  timeout(100);
  while (stop_requests.load() == 0) {
    int rows = 0;
    int cols = 0;
    getmaxyx(stdscr, rows, cols);
    draw(render_top(input, state, cols, rows, clock.now_ms()), (*session)->colors());
    const int key = getch();
    if (key != ERR && key != KEY_RESIZE) {
      const TopCommand command = handle_key(state, translate_key(key), input);
      if (command.kind == TopCommand::Kind::kQuit) break;
      if (command.kind == TopCommand::Kind::kCancel) {
        Status s = source.cancel(command.job);
        state.message = s.ok() ? "job " + std::to_string(command.job) + ": cancelling"
                               : "job " + std::to_string(command.job) + ": " + s.error().message();
        next_read = 0;  // show the change at once
      }
      if (command.kind == TopCommand::Kind::kFollowLog) follow_log(source, state);
    }
    if (clock.monotonic_ms() >= next_read) {
      input = source.read();
      follow_selection(state, input);
      follow_log(source, state);
      next_read = clock.monotonic_ms() + options.interval_ms;
    }
  }
  return OkStatus();
}

void print_top_once(TopSource& source, int width, Clock& clock, std::ostream& out) {
  TopInput input = source.read();
  TopState state;
  // Tall enough for every GPU process and job: nothing is cut in a pipe.
  const int height =
      16 + static_cast<int>(input.snapshot.gpus.size() * 2 + input.snapshot.processes.size() * 2 +
                            input.snapshot.jobs.size());
  std::vector<TopLine> lines = render_top(input, state, width, height, clock.now_ms());
  lines.pop_back();  // the keys: nothing to press here
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (!input.error.empty()) lines.push_back({{"colo top: " + input.error, TopStyle::kNote}});
  out << plain_text(lines);
}

}  // namespace colo
