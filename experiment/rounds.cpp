#include "experiment/rounds.hpp"

#include <fmt/format.h>

#include "collector/runner/interrupt.hpp"
#include "core/atomic_file.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"

namespace schedlab {

RoundsOutcome run_rounds(const std::vector<RoundSide>& sides, int rounds,
                         const std::filesystem::path& out_dir, std::uint64_t seed, Progress& progress) {
  if (sides.size() < 2) throw InputError("rounds need at least two sides");
  if (rounds < 1) throw InputError("--trials must be at least 1");
  const std::string id = new_run_id(seed);
  RoundsOutcome out;
  out.dir = out_dir / id;
  std::error_code ec;
  if (!std::filesystem::create_directory(out.dir, ec) || ec)
    throw Error("cannot create " + out.dir.string() + (ec ? ": " + ec.message() : ": it exists"));
  for (const auto& s : sides) std::filesystem::create_directory(out.dir / s.name);
  out.record = out.dir / "rounds.json";
  const std::string instance = sides.front().run->instances().front().id;
  // One key on every side's copy of each instance, so `schedlab diff` pairs them across configurations.
  const std::string compared_as = "rounds " + id;
  nlohmann::json record = {{"schema", "schedlab.rounds/1"},    {"id", id},
                           {"started_at", utc_timestamp()},    {"seed", seed},
                           {"sides", nlohmann::json::array()}, {"rounds", nlohmann::json::array()}};
  for (const auto& s : sides)
    record["sides"].push_back({{"name", s.name}, {"dir", s.name}, {"configuration", s.configuration}});
  auto save = [&] { write_file_atomic(out.record, record.dump(2) + "\n", /*replace=*/true); };
  save();

  InterruptGuard interrupt(BrokenPipe::kInterrupts);
  std::vector<std::unique_ptr<TrialRunner>> runners;
  for (const auto& s : sides)
    runners.push_back(std::make_unique<TrialRunner>(*s.run, progress, interrupt.flag(), id + "-" + s.name));
  std::vector<std::string> lines;
  auto say = [&](const std::string& t) {
    lines.push_back(t);
    progress.message(t);
  };
  std::string names;
  for (const auto& s : sides) names += (names.empty() ? "" : ", ") + s.name;
  say(fmt::format("rounds {}: {} configurations ({}) x {} rounds, each round in a seeded random order", id,
                  sides.size(), names, rounds));
  const double start = monotonic_seconds();
  for (int round = 0; round < rounds && !out.interrupted; ++round) {
    const auto order = shuffled_order(sides.size(), seed ^ (0x5eedULL + static_cast<std::uint64_t>(round)));
    nlohmann::json row = {
        {"round", round}, {"order", nlohmann::json::array()}, {"trials", nlohmann::json::array()}};
    const double round_start = monotonic_seconds();
    for (std::size_t position = 0; position < order.size() && !out.interrupted; ++position) {
      const auto& side = sides[order[position]];
      row["order"].push_back(side.name);
      SettlePolicy settle = side.run->plan().settle;
      if (round > 0 || position > 0) settle.max_wait_s = 0;  // the rounds' own trials are the load
      nlohmann::json tag = {{"id", id}, {"round", round}, {"side", side.name}, {"position", position}};
      auto trial = runners[order[position]]->run_trial(
          round, rounds, out.dir / side.name / fmt::format("{}-{}-trial{}.json", id, side.name, round + 1),
          settle, [&](Bundle& b) {
            b.experiment = tag;
            for (auto& in : b.instances) in.compared_as = compared_as + ": " + in.id;
          });
      out.failed_repetitions += trial.failed_repetitions;
      out.interrupted = trial.interrupted;
      nlohmann::json t = {{"side", side.name},
                          {"bundle", trial.path.filename().string()},
                          {"failed_repetitions", trial.failed_repetitions}};
      if (const auto& sw = trial.bundle.environment.value("runtime_switch", nlohmann::json()); sw.is_object())
        t["switch"] = sw;
      row["trials"].push_back(t);
    }
    row["seconds"] = monotonic_seconds() - round_start;
    record["rounds"].push_back(row);
    save();
  }
  const double elapsed = monotonic_seconds() - start;
  record["finished_at"] = utc_timestamp();
  record["seconds"] = elapsed;
  record["interrupted"] = out.interrupted;
  save();
  std::string dirs;
  for (const auto& s : sides) dirs += " " + (out.dir / s.name).string();
  say(fmt::format("{} rounds done in {:.1f} min ({} of {} instance(s)); compare with: schedlab diff{}",
                  record["rounds"].size(), elapsed / 60, instance, sides.front().run->instances().size(),
                  dirs));
  progress.done();
  for (const auto& l : lines) out.summary += l + "\n";
  return out;
}

}  // namespace schedlab
