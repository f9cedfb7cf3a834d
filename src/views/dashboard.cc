#include "views/dashboard.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <vector>

#include "report/figures.h"
#include "report/html_report.h"

namespace colo {
namespace {

constexpr size_t kEndedReportsKept = 8;

HttpAnswer text_answer(int status, const std::string& content_type, std::string body) {
  return HttpAnswer{status, content_type, std::move(body)};
}

HttpAnswer not_found(const std::string& what) {
  return text_answer(404, "text/plain; charset=utf-8",
                     what + "\n(the dashboard is at /dashboard/; / lists the JSON API)\n");
}

std::optional<int64_t> parse_id(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v <= 0) return std::nullopt;
  return v;
}

// `name` + `suffix` among the report's figures and tables; its file's content.
std::optional<std::string> report_file(const ReportContent& content, std::string_view file,
                                       std::string_view suffix, bool csv) {
  if (file.size() <= suffix.size() || file.substr(file.size() - suffix.size()) != suffix)
    return std::nullopt;
  const std::string_view name = file.substr(0, file.size() - suffix.size());
  for (const Section& section : content.sections) {
    for (const Figure& f : section.figures) {
      if (f.name == name) return csv ? to_csv(f.data) : render_figure_html(f);
    }
    if (!csv) continue;
    for (const Table& t : section.tables) {
      if (t.name == name) return to_csv(t);
    }
  }
  return std::nullopt;
}

constexpr std::string_view kFirstDataBlock =
    "<script type=\"application/json\" id=\"first-data\">null</script>";

// An API answer as first data: its JSON, or what went wrong.
nlohmann::json answer_json(const HttpAnswer& answer) {
  nlohmann::json body = nlohmann::json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  if (answer.status == 200 && !body.is_discarded()) return body;
  std::string message = body.is_object() && body.contains("error") && body["error"].is_string()
                            ? body["error"].get<std::string>()
                            : answer.body;
  return {{"error", std::move(message)}, {"status", answer.status}};
}

}  // namespace

std::string dashboard_page(const nlohmann::json& first) {
  std::string html(dashboard_html());
  const size_t at = html.find(kFirstDataBlock);
  if (at == std::string::npos || first.is_null()) return html;
  std::string data = first.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // "<" stands only inside strings in JSON, where \u003c means the same.
  std::string escaped;
  escaped.reserve(data.size());
  for (char c : data) {
    if (c == '<')
      escaped += "\\u003c";
    else
      escaped += c;
  }
  const std::string_view open = kFirstDataBlock.substr(0, kFirstDataBlock.find('>') + 1);
  html.replace(at, kFirstDataBlock.size(), std::string(open) + escaped + "</script>");
  return html;
}

nlohmann::json dashboard_first_data(std::string_view path, const ApiReader& api) {
  if (!api) return nullptr;
  std::string_view rest = path.substr(std::min(path.size(), std::string_view("/dashboard").size()));
  if (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  if (rest.empty()) return {{"page", "overview"}, {"snapshot", answer_json(api("/api/snapshot"))}};
  if (rest == "usage") {
    return {{"page", "usage"},
            {"usage", answer_json(api("/api/usage"))},
            {"service", answer_json(api("/api/service"))}};
  }
  if (rest.rfind("job/", 0) == 0 && parse_id(rest.substr(4))) {
    return {{"page", "job"},
            {"job", answer_json(api(fmt::format("/api/jobs/{}", rest.substr(4))))},
            {"service", answer_json(api("/api/service"))}};
  }
  return nullptr;
}

DashboardPages::DashboardPages(std::unique_ptr<RunStore> store) : store_(std::move(store)) {
  if (store_) refresher_ = std::thread([this] { refresh_loop(); });
}

DashboardPages::~DashboardPages() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

int64_t DashboardPages::builds() const {
  std::lock_guard lock(mu_);
  return builds_;
}

std::optional<HttpAnswer> DashboardPages::get(const std::string& path, const ApiReader& api) {
  const std::string_view p(path);
  if (p != "/dashboard" && p.rfind("/dashboard/", 0) != 0) return std::nullopt;
  const std::string_view rest = p.size() > 11 ? p.substr(11) : std::string_view();
  const auto page = [&] {
    return text_answer(200, "text/html; charset=utf-8",
                       dashboard_page(dashboard_first_data(p, api)));
  };
  if (rest.empty() || rest == "usage") return page();
  if (rest == "echarts.min.js") {
    return text_answer(200, "application/javascript; charset=utf-8", std::string(echarts_js()));
  }
  if (rest.rfind("job/", 0) == 0) {
    if (!parse_id(rest.substr(4))) return not_found(fmt::format("no such page: {}", path));
    return page();
  }
  if (rest.rfind("runs/", 0) == 0) {
    const std::string_view after = rest.substr(5);
    const size_t slash = after.find('/');
    std::optional<int64_t> id = parse_id(after.substr(0, slash));
    if (!id) return not_found(fmt::format("no such page: {} (/dashboard/runs/ID/)", path));
    if (slash == std::string_view::npos) {
      // The report's links are relative to the run's directory.
      const std::string to = fmt::format("/dashboard/runs/{}/", *id);
      return text_answer(200, "text/html; charset=utf-8",
                         fmt::format("<!DOCTYPE html><meta http-equiv=\"refresh\" content=\"0; "
                                     "url={0}\"><a href=\"{0}\">{0}</a>\n",
                                     to));
    }
    return run_page(*id, std::string(after.substr(slash + 1)));
  }
  return not_found(fmt::format("no such page: {}", path));
}

HttpAnswer DashboardPages::run_page(int64_t run_id, const std::string& rest) {
  Result<std::shared_ptr<const BuiltReport>> report = report_of(run_id);
  if (!report.ok()) {
    const bool missing = report.error().message().find("no run") != std::string::npos;
    return text_answer(missing ? 404 : 503, "text/plain; charset=utf-8",
                       fmt::format("run {}: {}\n", run_id, report.error().message()));
  }
  const ReportContent& content = (*report)->content;
  if (rest.empty() || rest == "index.html")
    return text_answer(200, "text/html; charset=utf-8", render_index_html(content));
  if (rest == "summary.txt")
    return text_answer(200, "text/plain; charset=utf-8", content.summary_text);
  if (rest == "figures/echarts.min.js")
    return text_answer(200, "application/javascript; charset=utf-8", std::string(echarts_js()));
  if (rest.rfind("csv/", 0) == 0) {
    if (auto csv = report_file(content, std::string_view(rest).substr(4), ".csv", true))
      return text_answer(200, "text/csv; charset=utf-8", std::move(*csv));
  }
  if (rest.rfind("figures/", 0) == 0) {
    if (auto page = report_file(content, std::string_view(rest).substr(8), ".html", false))
      return text_answer(200, "text/html; charset=utf-8", std::move(*page));
  }
  return not_found(fmt::format("run {} has no {}", run_id, rest));
}

Result<std::shared_ptr<const BuiltReport>> DashboardPages::report_of(int64_t run_id) {
  if (!store_) return Error("this colo serve has no store to read runs from");
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(run_id); it != cache_.end()) {
      it->second.asked_ms = clock_.monotonic_ms();
      return it->second.report;
    }
  }
  return build(run_id, /*refresh=*/false);
}

Result<std::shared_ptr<const BuiltReport>> DashboardPages::build(int64_t run_id, bool refresh) {
  std::lock_guard build_lock(build_mu_);
  // The version first: a commit while building makes the next round rebuild.
  Result<int64_t> version = store_->data_version();
  if (!version.ok()) return version.error();
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(run_id);
    // Another request built it while this one waited; or nothing changed.
    if (it != cache_.end() && (!refresh || it->second.data_version == *version)) {
      it->second.built_ms = clock_.monotonic_ms();
      return it->second.report;
    }
  }
  Result<RunRow> run = store_->run(run_id);
  if (!run.ok()) return run.error();
  Result<BuiltReport> built =
      build_report(*store_, {ReportTarget{ReportTarget::Kind::kRun, run_id}});
  if (!built.ok()) return built.error();
  auto shared = std::make_shared<const BuiltReport>(std::move(built).value());
  std::lock_guard lock(mu_);
  ++builds_;
  const int64_t now = clock_.monotonic_ms();
  auto [it, added] = cache_.try_emplace(run_id);
  it->second = Cached{shared, *version, now, added ? now : it->second.asked_ms,
                      run->state != RunState::kRunning};
  // Ended runs no longer change: a few are kept.
  size_t ended = 0;
  for (const auto& entry : cache_) ended += entry.second.ended;
  for (auto e = cache_.begin(); ended > kEndedReportsKept && e != cache_.end();) {
    if (e->second.ended && e->first != run_id) {
      e = cache_.erase(e);
      --ended;
    } else {
      ++e;
    }
  }
  return shared;
}

void DashboardPages::refresh_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(kRefreshMs));
    if (stopping_) return;
    std::vector<int64_t> due;
    const int64_t now = clock_.monotonic_ms();
    for (auto it = cache_.begin(); it != cache_.end();) {
      const Cached& c = it->second;
      if (!c.ended && now - c.asked_ms > kWatchedMs) {
        it = cache_.erase(it);  // nobody reads it: built again when asked for
        continue;
      }
      if (!c.ended && now - c.built_ms >= kRefreshMs) due.push_back(it->first);
      ++it;
    }
    lock.unlock();
    for (int64_t run_id : due) (void)build(run_id, /*refresh=*/true);
    lock.lock();
  }
}

PageRoutes dashboard_routes(const std::string& store_path) {
  Result<std::unique_ptr<RunStore>> store = RunStore::open_read_only(store_path);
  auto pages = std::make_shared<DashboardPages>(store.ok() ? std::move(store).value() : nullptr);
  return [pages](const std::string& path, const ApiReader& api) { return pages->get(path, api); };
}

}  // namespace colo
