#pragma once
// One PUT, POST or DELETE of a text exposition to a Pushgateway group, with a bounded wait.
//
// Not prometheus-cpp's Gateway: its libcurl request (1.0.1, push/src/curl_wrapper.cc) sets no timeout, so
// a Pushgateway that accepts the connection and never answers would hold the daemon's loop forever, and it
// returns only a status code, dropping the body in which the Pushgateway explains a refusal ("pushed
// metrics are invalid or inconsistent with existing metrics: ...").
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace schedlab {

// URL/metrics/job/JOB/NAME/VALUE..., each value base64url-encoded ("NAME@base64/...") when it holds a
// character a path segment cannot carry as is (the '/' of "t1/running"). Throws InputError for a URL
// that is not http(s)://HOST[:PORT][/PREFIX].
std::string pushgateway_group_url(const std::string& url, const std::string& job,
                                  const std::vector<std::pair<std::string, std::string>>& grouping);

// Sends `exposition` (text format 0.0.4) to `group_url` with `method`: POST replaces the families sent
// within the group, PUT replaces the whole group with what is sent, DELETE (no body) removes the group.
// Returns an error text naming the method and URL, empty on a 2xx answer.
std::string send_exposition(const std::string& group_url, const std::string& method,
                            const std::string& exposition, std::chrono::milliseconds timeout);

}  // namespace schedlab
