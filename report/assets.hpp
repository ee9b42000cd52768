#pragma once
// Files the page inlines, embedded into the library at build time (embed_assets.cmake), so the report
// needs neither the network nor files beside the binary.
#include <string_view>

namespace schedlab::report {

// By file name: "uPlot.iife.min.js", "uPlot.min.css", "report.js", "report.css". Throws for another name.
std::string_view asset(std::string_view name);

}  // namespace schedlab::report
