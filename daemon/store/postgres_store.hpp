#pragma once
// The PostgreSQL store (postgres_store.cpp): open_store and open_store_to_read choose it for a
// postgresql:// URL; these are what only it has.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "daemon/store/store.hpp"

namespace schedlab {

namespace pg {
class Connection;
}

// Indexes a bundle inside the caller's transaction on `db` (the work queue ends a step and indexes its
// bundle in one). False when it is there already: by path, or by run id and trial under another path.
bool insert_bundle_in(pg::Connection& db, const std::filesystem::path& path, const Bundle& bundle);

// Creates or upgrades the schema (one transaction under an advisory lock); returns its version.
int migrate_store(const std::string& url);
void migrate_store(pg::Connection& db);

// The box a shared store's campaign progress belongs to: `host`, or this machine's hostname when "".
std::string store_host(const std::string& host);

// `host` scopes campaign progress ("" : this machine's hostname).
std::unique_ptr<Store> open_postgres_store(const std::string& url, const std::string& host, bool for_reading);

struct ImportCounts {
  int bundles = 0;                   // newly indexed
  int runs = 0;                      // campaign runs copied (with their steps)
  int campaigns = 0;                 // campaigns whose first sighting was copied
  int changes = 0;                   // change points copied
  std::vector<std::string> skipped;  // files that did not load
};

// Indexes every bundle under `dir` (those indexed already are left as they are) and, when `progress` is
// given, copies its campaign progress (runs, steps, first sightings, change points) for its host. A run
// already there (same host, campaign and start) is not copied again: importing twice changes nothing.
ImportCounts import_into_postgres(const std::string& url, const std::string& host,
                                  const std::filesystem::path& dir, Store* progress);

}  // namespace schedlab
