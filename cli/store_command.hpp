#pragma once
// `schedlab history` and `schedlab store rebuild | migrate | import`: argument parsing only; the work is in
// daemon/store.
#include <CLI/CLI.hpp>

#include <string>

namespace schedlab {

class Store;

// Root keeps the store with the system's state; others in their home.
std::string default_store_url();

class StoreCommand {
 public:
  explicit StoreCommand(CLI::App& app);
  bool chosen() const { return history_->parsed() || store_->parsed(); }
  int run() const;

 private:
  int print_history(Store& store) const;
  int run_import() const;

  CLI::App *history_, *store_, *rebuild_, *migrate_, *import_;
  std::string url_ = default_store_url(), workload_, metric_, kernel_, instance_, dir_, from_, host_;
};

}  // namespace schedlab
