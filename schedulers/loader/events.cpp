#include "events.hpp"

#include <iostream>

namespace schedlab::scx {

void emit_event(const nlohmann::json& event) {
  // The kernel's exit message is not guaranteed UTF-8: replace, never throw, on the way out.
  std::cout << event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

void emit_error(const std::string& stage, const std::string& message, int errno_value) {
  nlohmann::json event = {{"event", "error"}, {"stage", stage}, {"message", message}};
  if (errno_value != 0) event["errno"] = errno_value;
  emit_event(event);
  std::cerr << "schedlab-scx: " << message << "\n";
}

}  // namespace schedlab::scx
