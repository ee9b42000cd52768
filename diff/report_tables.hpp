#pragma once
// The tables of the diff's text and markdown, built once: each renders as text within a width or as
// markdown (table.hpp).
#include "core/text_table.hpp"
#include "diff/diff.hpp"

namespace schedlab {

// A verdict in colour for a terminal: worse red, better green, the undecided yellow.
std::string paint_verdict(const std::string& text, bool colour);

// A line per instance and headline metric (and failure rate), regressions first (summary_lines).
Table verdict_table(const DiffResult& diff, bool colour);
// kernbench's classic report: Elapsed, System, User, CPU as mean (sd), a line per side.
Table kernbench_table(const InstanceDiff& in, const DiffResult& diff, std::size_t indent);
// Every metric of an instance: per side n, median, CV; per other side change, interval, p, p(BH), t.
Table metrics_table(const InstanceDiff& in, const DiffResult& diff, std::size_t indent);
// The counter rows a reader sees (counters_shown), with the noise of their repetitions.
Table counters_table(const InstanceDiff& in, const DiffResult& diff, std::size_t indent);
// A trace or diagnostic schedstat summary, the two sides side by side.
Table diagnostic_table(const DiagnosticTable& d, const DiffResult& diff, std::size_t indent);

}  // namespace schedlab
