// The page around the data: inlined CSS and scripts, the data as a JSON script element, the title.
#include <cctype>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "report/assets.hpp"
#include "report/report.hpp"

namespace schedlab {
namespace {

// An inlined asset must not end its own element early; checked here because the vendored copy can change.
std::string_view inline_asset(std::string_view name, std::string_view closing_tag) {
  auto text = report::asset(name);
  std::string lower(text);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find(closing_tag) != std::string::npos)
    throw Error(fmt::format("embedded {} contains {}: it cannot be inlined", name, closing_tag));
  return text;
}

std::string page_title(const nlohmann::json& data) {
  std::string names;
  for (const auto& s : data.at("sides"))
    names += (names.empty() ? "" : " vs ") + s.at("name").get<std::string>();
  return "schedlab report: " + names;
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string json_for_script(const nlohmann::json& data) {
  // Replacing invalid UTF-8 keeps a damaged label from making the whole page unreadable.
  auto text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
             (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string report_html(const nlohmann::json& data) {
  // `<`, `>` and `&` occur in JSON only inside strings, where \u escapes mean the same characters.
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="schedlab report">
<title>{title}</title>
<style>{uplot_css}</style>
<style>{report_css}</style>
</head>
<body>
<noscript>This report draws its tables and charts with JavaScript; the data is in the report-data element of this file.</noscript>
<main id="report"></main>
<script type="application/json" id="report-data">{data}</script>
<script>{uplot_js}</script>
<script>{report_js}</script>
</body>
</html>
)",
                     fmt::arg("title", html_escape(page_title(data))),
                     fmt::arg("uplot_css", inline_asset("uPlot.min.css", "</style")),
                     fmt::arg("report_css", inline_asset("report.css", "</style")),
                     fmt::arg("data", json_for_script(data)),
                     fmt::arg("uplot_js", inline_asset("uPlot.iife.min.js", "</script")),
                     fmt::arg("report_js", inline_asset("report.js", "</script")));
}

void write_report(const std::filesystem::path& file, const std::string& html) {
  write_file_atomic(file, html, /*replace=*/true);
  // The temporary file was private (mkstemp); a report is made to be read by others.
  namespace fs = std::filesystem;
  fs::permissions(
      file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
}

}  // namespace schedlab
