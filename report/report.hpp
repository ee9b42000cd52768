#pragma once
// `schedlab report`: one self-contained HTML page (uPlot and the page's own JS and CSS inlined, the data
// as JSON) with the runs' identities, the diff's tables and verdicts, per-workload charts and the
// environment. Every number and verdict comes from the diff library, so the page says what
// `schedlab diff` says.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diff/diff.hpp"

namespace schedlab {

inline constexpr const char* kReportSchema = "schedlab.report/1";

// What the page shows, as data (the page's `report-data` block). With two or more sides, the others
// are compared with the first (`diff` holds diff_to_json); with one side there is no diff and no verdict.
// Throws InputError where build_diff does (nothing in common, different hardware without --force).
nlohmann::json report_data(const std::vector<Side>& sides, const DiffOptions& options);

// The whole page around `data`.
std::string report_html(const nlohmann::json& data);

// Writes the page atomically (temporary file, rename): an existing FILE is replaced only by a complete
// report, never truncated or lost when something fails.
void write_report(const std::filesystem::path& file, const std::string& html);

// For embedding in HTML: `&`, `<`, `>`, quotes as entities.
std::string html_escape(const std::string& text);
// JSON that can sit inside <script>: `<`, `>`, `&`, U+2028 and U+2029 as \u escapes, so no text from a
// bundle can close the element or open a comment.
std::string json_for_script(const nlohmann::json& data);

}  // namespace schedlab
