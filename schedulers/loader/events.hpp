#pragma once
// The loader's stdout: one JSON object per line, flushed at once, so that a parent reading the pipe
// sees each event when it happens.
#include <nlohmann/json.hpp>
#include <string>

namespace schedlab::scx {

void emit_event(const nlohmann::json& event);
// {"event":"error","stage":STAGE,"message":M[,"errno":E]}, plus the message on stderr.
void emit_error(const std::string& stage, const std::string& message, int errno_value = 0);

}  // namespace schedlab::scx
