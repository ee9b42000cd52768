#include "collector/runner/progress.hpp"

#include <unistd.h>

#include <fmt/format.h>

namespace schedlab {
namespace {

std::string rep_label(const ProgressState& s) {
  // Counted from 1, as the summary counts them; diagnostic repetitions follow the timed ones.
  std::string r = s.repetition == 0 ? "warm-up"
                  : s.repetition <= s.repetitions
                      ? fmt::format("rep {}/{}", s.repetition, s.repetitions)
                      : fmt::format("diagnostic {}", s.repetition - s.repetitions);
  if (s.trials > 1) r = fmt::format("trial {}/{} {}", s.trial + 1, s.trials, r);
  return r;
}

std::string headline(const Repetition& rep, const std::string& metric) {
  if (!rep.ok()) return rep.status + ": " + rep.reason;
  std::string out = fmt::format("ok in {:.2f} s", rep.duration_s);
  auto it = rep.metrics.find(metric);
  if (it != rep.metrics.end())
    out += fmt::format(", {}={:.6g} {}", it->first, it->second.value, it->second.unit);
  return out;
}

// Progress is a courtesy: a closed or full output (`run ... 2>&1 | head`) must not end the run, which
// sees the SIGPIPE as an interruption and keeps what it measured. Write errors are dropped.
void emit(std::FILE* out, const std::string& text) {
  std::fputs(text.c_str(), out);
  std::fflush(out);
}

std::string eta(double s) {
  return s < 0 ? "?" : fmt::format("~{:.0f} s", s);
}

class LogProgress : public Progress {
 public:
  explicit LogProgress(std::FILE* out) : out_(out) {}
  void started(const ProgressState& s) override {
    emit(out_, fmt::format("schedlab: {} {}: started ({:.0f} s elapsed, {} left)\n", s.instance, rep_label(s),
                           s.elapsed_s, eta(s.eta_s)));
  }
  void finished(const ProgressState& s, const Repetition& rep) override {
    emit(out_,
         fmt::format("schedlab: {} {}: {}\n", s.instance, rep_label(s), headline(rep, s.headline_metric)));
  }
  void message(const std::string& text) override { emit(out_, "schedlab: " + text + "\n"); }
  void done() override {}

 private:
  std::FILE* out_;
};

class TerminalProgress : public Progress {
 public:
  explicit TerminalProgress(std::FILE* out) : out_(out) {}
  void started(const ProgressState& s) override {
    emit(out_, fmt::format("\r\033[K{} {} · {:.0f} s elapsed · {} left", s.instance, rep_label(s),
                           s.elapsed_s, eta(s.eta_s)));
  }
  void finished(const ProgressState& s, const Repetition& rep) override {
    if (!rep.ok())
      emit(out_,
           fmt::format("\r\033[K{} {}: {}\n", s.instance, rep_label(s), headline(rep, s.headline_metric)));
  }
  void message(const std::string& text) override { emit(out_, "\r\033[K" + text + "\n"); }
  void done() override { emit(out_, "\r\033[K"); }

 private:
  std::FILE* out_;
};

class SilentProgress : public Progress {
 public:
  void started(const ProgressState&) override {}
  void finished(const ProgressState&, const Repetition&) override {}
  void message(const std::string&) override {}
  void done() override {}
};

}  // namespace

std::unique_ptr<Progress> make_progress(std::FILE* out) {
  if (::isatty(::fileno(out))) return std::make_unique<TerminalProgress>(out);
  return std::make_unique<LogProgress>(out);
}

std::unique_ptr<Progress> make_silent_progress() {
  return std::make_unique<SilentProgress>();
}

}  // namespace schedlab
