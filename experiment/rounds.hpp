#pragma once
// Three or more sides (runtime configurations) alternated inside one boot: each round runs one trial of
// every side, in an order drawn from a seeded shuffle, so no side always runs first or after another.
// Two sides are an experiment (experiment.hpp), with its sequential verdict; rounds give `schedlab diff`
// the trials of a baseline against several others.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "collector/runner/progress.hpp"
#include "collector/runner/runner.hpp"

namespace schedlab {

struct RoundSide {
  std::string name;  // OUT/<id>/<name>/
  PreparedRun* run = nullptr;
  nlohmann::json configuration;  // as given, for the record
};

struct RoundsOutcome {
  std::filesystem::path dir;     // OUT/<id>
  std::filesystem::path record;  // OUT/<id>/rounds.json
  std::string summary;
  int failed_repetitions = 0;
  bool interrupted = false;
};

RoundsOutcome run_rounds(const std::vector<RoundSide>& sides, int rounds,
                         const std::filesystem::path& out_dir, std::uint64_t seed, Progress& progress);

}  // namespace schedlab
