#include "daemon/exporter/push.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <memory>

#include "core/error.hpp"

namespace schedlab {

namespace {

std::string base64url(const std::string& value) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : value) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 0x3f];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 0x3f];
  while (out.size() % 4) out += '=';
  return out.empty() ? "=" : out;  // "=": the Pushgateway's spelling of an empty value
}

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  auto* body = static_cast<std::string*>(out);
  if (body->size() < 4096) body->append(data, size * n);  // enough for an error text
  return size * n;
}

}  // namespace

std::string pushgateway_group_url(const std::string& url, const std::string& job,
                                  const std::vector<std::pair<std::string, std::string>>& grouping) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    throw InputError("pushgateway \"" + url + "\": expected http://HOST:PORT");
  std::string out = url;
  while (!out.empty() && out.back() == '/') out.pop_back();
  out += "/metrics/job/" + job;
  for (const auto& [name, value] : grouping) {
    const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':';
    });
    out += plain ? "/" + name + "/" + value : "/" + name + "@base64/" + base64url(value);
  }
  return out;
}

std::string send_exposition(const std::string& group_url, const std::string& method,
                            const std::string& exposition, std::chrono::milliseconds timeout) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return "pushgateway " + group_url + ": curl_easy_init failed";
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(
      curl_slist_append(nullptr, "Content-Type: text/plain; version=0.0.4; charset=utf-8"),
      curl_slist_free_all);
  std::string body;
  char error[CURL_ERROR_SIZE] = "";
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, group_url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  if (method == "DELETE") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
  } else {
    // The body as a POST's, sent under the method asked for (curl's way of a PUT from memory).
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, exposition.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(exposition.size()));
    if (method != "POST") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL,
                   1L);  // no SIGALRM for name resolution timeouts: the daemon has threads
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK)
    return "pushgateway " + method + " " + group_url + ": " +
           (error[0] ? std::string(error) : curl_easy_strerror(rc));
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) return {};
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return "pushgateway " + method + " " + group_url + ": HTTP " + std::to_string(status) +
         (body.empty() ? "" : ": " + body);
}

}  // namespace schedlab
