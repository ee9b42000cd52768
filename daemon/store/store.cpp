#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/postgres_store.hpp"
#include "daemon/store/store.hpp"

namespace schedlab {
namespace {

std::string sqlite_path(const std::string& url) {
  std::string path = url;
  const std::string sqlite = "sqlite://";
  if (url.rfind(sqlite, 0) == 0)
    path = url.substr(sqlite.size());
  else if (url.find("://") != std::string::npos)
    throw InputError("store '" + pg::redacted(url) +
                     "': unknown scheme (expected sqlite:///PATH or postgresql://...)");
  if (path.empty()) throw InputError("store '" + url + "': no database path");
  return path;
}

}  // namespace

std::vector<std::filesystem::path> bundle_files(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw InputError(dir.string() + ": not a directory of bundles");
  std::vector<std::filesystem::path> files;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory() && it->path().extension() == ".discarded") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ".json") files.push_back(it->path());
  }
  if (ec) throw Error(dir.string() + ": cannot list: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

std::unique_ptr<Store> open_store_to_read(const std::string& url, const std::string& host) {
  if (pg::is_postgres_url(url)) return open_postgres_store(url, host, true);
  const std::filesystem::path path = sqlite_path(url);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError("no store at " + path.string());
  return open_sqlite_store(path, true);
}

std::unique_ptr<Store> open_store(const std::string& url, const std::string& host) {
  if (pg::is_postgres_url(url)) return open_postgres_store(url, host, false);
  const std::filesystem::path path = sqlite_path(url);
  std::error_code ec;
  if (!path.parent_path().empty()) std::filesystem::create_directories(path.parent_path(), ec);
  return open_sqlite_store(path, false);
}

}  // namespace schedlab
