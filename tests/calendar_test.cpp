// Calendar schedules against systemd's own answers: tests/fixtures/calendar/systemd-252.txt holds
// `systemd-analyze calendar --iterations=5 --base-time=...` output (capture.sh beside it wrote it),
// in Europe/Berlin across the 2027 DST transitions and in UTC.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <regex>
#include <sstream>

#include "core/error.hpp"
#include "daemon/campaign/calendar.hpp"
#include "test_util.hpp"

namespace schedlab {
namespace {

using Clock = std::chrono::system_clock;

const std::string kFixture = std::string(SCHEDLAB_FIXTURES_DIR) + "/calendar/systemd-252.txt";

// Sets TZ for the scope (next_elapse reads local time through it), restoring the old value after.
class ScopedTz {
 public:
  explicit ScopedTz(const std::string& tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    ::setenv("TZ", tz.c_str(), 1);
    ::tzset();
  }
  ~ScopedTz() {
    if (old_)
      ::setenv("TZ", old_->c_str(), 1);
    else
      ::unsetenv("TZ");
    ::tzset();
  }
  ScopedTz(const ScopedTz&) = delete;
  ScopedTz& operator=(const ScopedTz&) = delete;

 private:
  std::optional<std::string> old_;
};

// "2027-03-28 00:10:00" read as UTC.
Clock::time_point utc(const std::string& text) {
  std::tm tm{};
  std::istringstream in(text);
  in >> std::get_time(&tm, "%Y-%m-%d %H:%M:%S");
  EXPECT_FALSE(in.fail()) << text;
  return Clock::from_time_t(::timegm(&tm));
}

std::string utc_text(Clock::time_point t) {
  const time_t secs = Clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

struct Case {
  std::string command;  // the fixture's "$ ..." line
  std::string tz;
  Clock::time_point base;
  std::string expression;
  std::vector<std::string> elapses;  // UTC, "YYYY-MM-DD HH:MM:SS"; empty: "Next elapse: never"
};

struct Fixture {
  std::vector<Case> cases;
  std::vector<std::string> refused;  // expressions systemd failed to parse
};

std::vector<std::string> single_quoted(const std::string& line) {
  std::vector<std::string> out;
  const std::regex q("'([^']*)'");
  for (auto it = std::sregex_iterator(line.begin(), line.end(), q); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

Fixture read_fixture() {
  Fixture f;
  std::istringstream in(testing::slurp(kFixture));
  // A time line: "    Next elapse: Wed 2026-12-02 02:00:00 CET", "       (in UTC): Wed ... UTC",
  // "       Iter. #2: Thu 2026-12-03 02:00:00 UTC".
  const std::regex time_line(
      R"(^\s*(Next elapse|\(in UTC\)|Iter\. #\d+): \w{3} (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (\S+)$)");
  std::string command, tz;
  Clock::time_point base;
  std::vector<std::string> expressions;
  std::size_t block = 0;
  Case* current = nullptr;
  std::vector<std::string> local_lines;  // for TZ=UTC, where no "(in UTC)" line is printed
  auto finish = [&] {
    if (current && current->elapses.empty() && !local_lines.empty()) current->elapses = local_lines;
    local_lines.clear();
  };
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("$ ", 0) == 0) {
      finish();
      current = nullptr;
      command = line;
      const auto q = single_quoted(line);
      if (line.find("--base-time=") == std::string::npos) {
        f.refused.push_back(q.at(0));
        continue;
      }
      tz = line.substr(std::string("$ TZ=").size(), line.find(' ', 2) - std::string("$ TZ=").size());
      base = utc(q.at(0).substr(0, 19));
      expressions.assign(q.begin() + 1, q.end());
      block = 0;
      continue;
    }
    if (line.rfind("Normalized form:", 0) == 0) {
      finish();
      f.cases.push_back({command, tz, base, expressions.at(block++), {}});
      current = &f.cases.back();
      continue;
    }
    std::smatch m;
    if (current && std::regex_match(line, m, time_line)) {
      if (m[1] == "(in UTC)")
        current->elapses.push_back(m[2]);
      else if (m[3] == "UTC")
        local_lines.push_back(m[2]);
    }
  }
  finish();
  return f;
}

TEST(Calendar, MatchesSystemdAnalyzeIncludingDstTransitions) {
  const auto fixture = read_fixture();
  ASSERT_EQ(fixture.cases.size(), 2u * 6 * 27) << "the fixture holds 2 zones x 6 base times x 27 expressions";
  int compared = 0;
  for (const auto& c : fixture.cases) {
    ScopedTz tz(c.tz);
    const auto spec = parse_calendar(c.expression);
    auto t = c.base;
    std::vector<std::string> ours;
    for (std::size_t i = 0; i < std::max<std::size_t>(c.elapses.size(), 1); ++i) {
      auto next = next_elapse(spec, t);
      if (!next) break;
      ours.push_back(utc_text(*next));
      t = *next;
    }
    EXPECT_EQ(ours, c.elapses) << c.command << "\n  expression '" << c.expression << "'";
    compared += static_cast<int>(c.elapses.size());
  }
  EXPECT_EQ(compared, 1454) << "elapses read from the fixture: a parser that drops lines compares less";
}

// The lines the fixture pins for the transitions, quoted so that a reader sees what is at stake.
TEST(Calendar, SpringForwardSkipsTheMissingTimeAndFallBackTakesTheFirst) {
  ScopedTz tz("Europe/Berlin");
  // "Next elapse: Mon 2027-03-29 02:30:00 CEST": 02:30 does not exist on 2027-03-28.
  EXPECT_EQ(utc_text(*next_elapse(parse_calendar("*-*-* 02:30:00"), utc("2027-03-27 22:10:00"))),
            "2027-03-29 00:30:00");
  // "*:0/30" from 01:10 CET: "Sun 2027-03-28 01:30:00 CET", then "Sun 2027-03-28 03:00:00 CEST".
  const auto half = parse_calendar("*:0/30");
  const auto first = *next_elapse(half, utc("2027-03-28 00:10:00"));
  EXPECT_EQ(utc_text(first), "2027-03-28 00:30:00");
  EXPECT_EQ(utc_text(*next_elapse(half, first)), "2027-03-28 01:00:00");
  // "Next elapse: Sun 2027-10-31 02:30:00 CEST", and the repeated 02:30 CET is not a second run:
  // "Iter. #2: Mon 2027-11-01 02:30:00 CET".
  const auto at = parse_calendar("*-*-* 02:30:00");
  const auto once = *next_elapse(at, utc("2027-10-30 23:40:00"));
  EXPECT_EQ(utc_text(once), "2027-10-31 00:30:00");
  EXPECT_EQ(utc_text(*next_elapse(at, once)), "2027-11-01 01:30:00");
}

TEST(Calendar, NextIsStrictlyAfter) {
  ScopedTz tz("UTC");
  const auto daily = parse_calendar("daily");
  const auto midnight = utc("2027-01-02 00:00:00");
  EXPECT_EQ(utc_text(*next_elapse(daily, midnight)), "2027-01-03 00:00:00");
  EXPECT_EQ(utc_text(*next_elapse(daily, midnight - std::chrono::microseconds(1))), "2027-01-02 00:00:00");
  EXPECT_EQ(utc_text(*next_elapse(daily, midnight - std::chrono::nanoseconds(1))), "2027-01-02 00:00:00");
  EXPECT_FALSE(next_elapse(parse_calendar("2020-01-01"), midnight).has_value());
  EXPECT_FALSE(next_elapse(parse_calendar("*-02-30"), midnight).has_value());  // never a real date
}

TEST(Calendar, RefusesWhatSystemdRefuses) {
  const auto fixture = read_fixture();
  ASSERT_GE(fixture.refused.size(), 10u);
  for (const auto& bad : fixture.refused) EXPECT_THROW(parse_calendar(bad), InputError) << "'" << bad << "'";
}

TEST(Calendar, ErrorsSayWhatIsWrong) {
  auto message = [](const std::string& text) {
    try {
      parse_calendar(text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(message("*-*-* 25:00"),
            "schedule '*-*-* 25:00': hour out of range (systemd calendar syntax, systemd.time(7))");
  // systemd takes a zone suffix; the daemon runs in its own local time, or UTC when the schedule says so.
  EXPECT_EQ(message("daily Europe/Berlin")
                .rfind("schedule 'daily Europe/Berlin': time zone 'Europe/Berlin' is not supported", 0),
            0u);
  EXPECT_EQ(
      message("*-*-* 02:00 CET").rfind("schedule '*-*-* 02:00 CET': time zone 'CET' is not supported", 0),
      0u);
  EXPECT_NE(message("*-*-* 02:00:00.5").find("fractions of a second are not supported"), std::string::npos);
  EXPECT_NE(message("").find("empty"), std::string::npos);
  EXPECT_EQ(parse_calendar("  Mon..Fri 02:00 ").text, "  Mon..Fri 02:00 ");
}

}  // namespace
}  // namespace schedlab
