#pragma once
// How a run reports its progress: a self-refreshing line on a terminal, plain log lines otherwise.
#include <cstdio>
#include <memory>
#include <string>

#include "core/result.hpp"

namespace schedlab {

struct ProgressState {
  std::string instance;
  int trial = 0, trials = 1;
  int repetition = 0;  // 0 = warm-up
  int repetitions = 0;
  double elapsed_s = 0;
  double eta_s = -1;            // unknown before the first repetition finished
  std::string headline_metric;  // shown in log lines
};

class Progress {
 public:
  virtual ~Progress() = default;
  virtual void started(const ProgressState& s) = 0;
  virtual void finished(const ProgressState& s, const Repetition& rep) = 0;
  virtual void message(const std::string& text) = 0;
  virtual void done() = 0;
};

// A terminal gets the refreshing line; anything else gets one log line per event.
std::unique_ptr<Progress> make_progress(std::FILE* out);
std::unique_ptr<Progress> make_silent_progress();

}  // namespace schedlab
