#include "report/png_export.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/paths.h"

namespace colo {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The last `n` lines of `text`.
std::string last_lines(const std::string& text, int n) {
  size_t pos = text.size();
  while (pos > 0 && (text[pos - 1] == '\n')) --pos;
  int lines = 0;
  size_t start = pos;
  while (start > 0) {
    if (text[start - 1] == '\n' && ++lines == n) break;
    --start;
  }
  return text.substr(start, pos - start);
}

// A temporary directory removed when this goes out of scope.
class TempDir {
 public:
  static Result<TempDir> create() {
    std::string pattern = (fs::temp_directory_path() / "colo-browser-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return Error(
          fmt::format("cannot create a temporary directory {}: {}", pattern, std::strerror(errno)));
    }
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

std::string file_url(const std::string& path) { return "file://" + absolute_path(path); }

}  // namespace

std::optional<std::string> find_browser() {
  for (const char* name :
       {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    if (std::optional<std::string> path = find_program(name)) return path;
  }
  return std::nullopt;
}

std::string browser_missing_hint() {
  return "no chromium, chromium-browser or google-chrome on PATH, so no PNGs were made; install "
         "one (Debian: apt-get install chromium) and run colo report again, or open the HTML "
         "report in any browser";
}

Result<std::string> run_headless_browser(const PngExportOptions& options,
                                         const std::vector<std::string>& extra_args,
                                         const std::string& url) {
  if (options.browser.empty()) return Error(browser_missing_hint());
  Result<TempDir> profile = TempDir::create();
  if (!profile) return profile.error();
  const std::string out_path = profile->path() + "/stdout.txt";
  const std::string err_path = profile->path() + "/stderr.txt";

  std::vector<std::string> args = {
      options.browser,
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-extensions",
      "--disable-dev-shm-usage",
      "--allow-file-access-from-files",
      "--user-data-dir=" + profile->path() + "/profile",
      fmt::format("--window-size={},{}", options.width_px, options.height_px),
      "--hide-scrollbars",
      fmt::format("--virtual-time-budget={}", options.virtual_time_budget_ms)};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  args.push_back(url);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (out_fd < 0 || err_fd < 0 || null_fd < 0) {
    for (int fd : {out_fd, err_fd, null_fd}) {
      if (fd >= 0) close(fd);
    }
    return Error(
        fmt::format("cannot create output files in {}: {}", profile->path(), std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out_fd);
  close(err_fd);
  close(null_fd);
  if (pid < 0)
    return Error(fmt::format("cannot start {}: {}", options.browser, std::strerror(errno)));
  setpgid(pid, pid);  // also here, so the group exists before we might signal it

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.timeout_ms);
  int status = 0;
  bool timed_out = false;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      return Error(fmt::format("waiting for {} failed: {}", options.browser, std::strerror(errno)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      kill(-pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);  // helpers the browser left in its group
  if (timed_out) {
    return Error(fmt::format("{} did not finish {} within {} ms and was killed", options.browser,
                             url, options.timeout_ms));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error(fmt::format("{} failed on {} (status {}): {}", options.browser, url,
                             WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                             last_lines(read_file(err_path), 5)));
  }
  return read_file(out_path);
}

Result<std::vector<std::string>> export_pngs(const std::vector<std::string>& pages,
                                             const std::string& png_dir,
                                             const PngExportOptions& options) {
  if (Status made = make_dirs(png_dir); !made) return made.error();
  std::vector<std::string> pngs;
  for (const std::string& page : pages) {
    const std::string png = png_dir + "/" + fs::path(page).stem().string() + ".png";
    std::error_code ignored;
    fs::remove(png, ignored);
    Result<std::string> ran =
        run_headless_browser(options, {"--screenshot=" + absolute_path(png)}, file_url(page));
    if (!ran) return ran.error().with_context("making " + png);
    std::error_code error;
    const auto size = fs::file_size(png, error);
    if (error || size == 0) {
      return Error(
          fmt::format("making {}: {} wrote no screenshot of {}", png, options.browser, page));
    }
    pngs.push_back(png);
  }
  return pngs;
}

Status verify_charts_drawn(const PngExportOptions& options, const std::string& page) {
  PngExportOptions big = options;  // every chart of a long page laid out
  big.width_px = std::max(options.width_px, 1200);
  big.height_px = std::max(options.height_px, 900);
  Result<std::string> dom = run_headless_browser(big, {"--dump-dom"}, file_url(page));
  if (!dom) return dom.error().with_context("checking that the charts of " + page + " drew");
  const std::string& html = *dom;
  const std::string marker = "data-figure=\"";
  std::string failed;
  int charts = 0;
  for (size_t at = html.find(marker); at != std::string::npos; at = html.find(marker, at + 1)) {
    const size_t tag_start = html.rfind('<', at);
    const size_t tag_end = html.find('>', at);
    if (tag_start == std::string::npos || html.compare(tag_start, 5, "<div ") != 0 ||
        html.find('\n', tag_start) < at)
      continue;  // the page's script mentions the attribute too
    ++charts;
    const size_t name_start = at + marker.size();
    const std::string name = html.substr(name_start, html.find('"', name_start) - name_start);
    const std::string tag = html.substr(tag_start, tag_end - tag_start);
    if (tag.find("data-rendered=\"yes\"") != std::string::npos) continue;
    std::string why = "its script did not run";
    const size_t next = html.find(marker, name_start);
    const std::string error_mark = "could not be drawn: ";
    const size_t error = html.find(error_mark, tag_end);
    if (error != std::string::npos && error < next) {
      const size_t from = error + error_mark.size();
      why = html.substr(from, std::min(html.find('<', from), from + 200) - from);
    }
    failed += fmt::format("{}{} ({})", failed.empty() ? "" : ", ", name, why);
  }
  if (charts == 0) return Error(fmt::format("{} holds no chart (data-figure)", page));
  if (!failed.empty()) {
    return Error(fmt::format("charts did not draw in {} on {}: {}", options.browser, page, failed));
  }
  return OkStatus();
}

}  // namespace colo
