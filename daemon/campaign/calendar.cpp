#include "daemon/campaign/calendar.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <tuple>
#include <vector>

#include "core/error.hpp"

// The grammar and the search follow systemd's calendarspec.c (systemd.time(7)) so that a campaign's
// schedule elapses when a systemd timer with the same expression would: the search walks broken-down
// local time field by field and lets mktime() normalise, which is how systemd skips a time inside the
// spring-forward gap and takes only the first of the two instances of a time repeated at fall-back.
// Seconds are whole seconds (systemd also takes fractions; a campaign has no use for them).

namespace schedlab {

namespace {

constexpr int kMinYear = 1970;
constexpr int kMaxYear = 2199;  // systemd's bound: an impossible date ("*-02-30") ends the search here
constexpr int kAllWeekdays = 127;

// start[..stop][/repeat]; stop < 0 when open.
struct Component {
  int start = 0;
  int stop = -1;
  int repeat = 0;
  bool operator<(const Component& o) const {
    return std::tie(start, stop, repeat) < std::tie(o.start, o.stop, o.repeat);
  }
  bool operator==(const Component& o) const = default;
};

// An empty chain is '*': any value.
using Chain = std::vector<Component>;

}  // namespace

struct CalendarSpec::Parsed {
  int weekdays = -1;  // bit 0 Monday .. bit 6 Sunday; -1 any day
  bool end_of_month = false;
  bool utc = false;
  Chain year, month, day, hour, minute, second;
};

namespace {

using Parsed = CalendarSpec::Parsed;

[[noreturn]] void refuse(const std::string& text, const std::string& why) {
  throw InputError("schedule '" + text + "': " + why + " (systemd calendar syntax, systemd.time(7))");
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

bool equals_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && starts_with_nocase(a, b);
}

// A cursor over the expression; every parse step either advances it or reports why it cannot.
class Parser {
 public:
  explicit Parser(std::string text) : text_(std::move(text)) {}

  Parsed parse() {
    std::string_view body = text_;
    if (body.size() > 4 && equals_nocase(body.substr(body.size() - 4), " UTC")) {
      out_.utc = true;
      body.remove_suffix(4);
    }
    body_ = body;
    if (!shorthand(body_)) {
      weekdays();
      if (!date()) time();
      if (pos_ != body_.size()) fail_here("unexpected text");
    }
    normalise();
    validate();
    return out_;
  }

 private:
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < body_.size() ? body_[pos_ + ahead] : '\0'; }

  [[noreturn]] void fail_here(const std::string& why) const {
    refuse(text_, why + " at position " + std::to_string(pos_ + 1));
  }

  bool shorthand(std::string_view s) {
    auto fixed = [&](Chain month, Chain day, Chain hour, Chain minute) {
      out_.month = std::move(month);
      out_.day = std::move(day);
      out_.hour = std::move(hour);
      out_.minute = std::move(minute);
      out_.second = {{0, -1, 0}};
      pos_ = body_.size();
      return true;
    };
    const Chain zero{{0, -1, 0}}, first{{1, -1, 0}};
    if (equals_nocase(s, "minutely")) {
      out_.second = zero;
      pos_ = body_.size();
      return true;
    }
    if (equals_nocase(s, "hourly")) return fixed({}, {}, {}, zero);
    if (equals_nocase(s, "daily")) return fixed({}, {}, zero, zero);
    if (equals_nocase(s, "weekly")) {
      out_.weekdays = 1;  // Monday
      return fixed({}, {}, zero, zero);
    }
    if (equals_nocase(s, "monthly")) return fixed({}, first, zero, zero);
    if (equals_nocase(s, "yearly") || equals_nocase(s, "annually")) return fixed(first, first, zero, zero);
    if (equals_nocase(s, "quarterly"))
      return fixed({{1, -1, 0}, {4, -1, 0}, {7, -1, 0}, {10, -1, 0}}, first, zero, zero);
    if (equals_nocase(s, "semiannually") || equals_nocase(s, "semi-annually") ||
        equals_nocase(s, "biannually") || equals_nocase(s, "bi-annually"))
      return fixed({{1, -1, 0}, {7, -1, 0}}, first, zero, zero);
    return false;
  }

  // "Mon", "Mon..Fri", "Sat,Sun", "Mon-Wed" (systemd's older range spelling); optional.
  void weekdays() {
    static const std::pair<const char*, int> kDays[] = {
        {"Monday", 0},   {"Mon", 0},      {"Tuesday", 1}, {"Tue", 1},    {"Wednesday", 2},
        {"Wed", 2},      {"Thursday", 3}, {"Thu", 3},     {"Friday", 4}, {"Fri", 4},
        {"Saturday", 5}, {"Sat", 5},      {"Sunday", 6},  {"Sun", 6}};
    int bits = 0, range_from = -1;
    auto done = [&] {
      while (peek() == ' ') ++pos_;
      out_.weekdays = bits;
    };
    for (bool first = true;; first = false) {
      int day = -1;
      for (const auto& [name, nr] : kDays) {
        const std::size_t len = std::char_traits<char>::length(name);
        if (!starts_with_nocase(body_.substr(pos_), name)) continue;
        const char after = peek(len);
        if (after != '\0' && after != '-' && after != '.' && after != ',' && after != ' ')
          fail_here("unknown weekday");
        day = nr;
        pos_ += len;
        break;
      }
      if (day < 0) {
        if (first) return;  // no weekday part: the date follows
        fail_here("expected a weekday");
      }
      bits |= 1 << day;
      if (range_from >= 0) {
        if (range_from > day) fail_here("a weekday range must go forward (Mon..Fri)");
        for (int d = range_from + 1; d < day; ++d) bits |= 1 << d;
      }
      if (peek() == '\0' || peek() == ' ') return done();
      if (peek() == '.') {
        if (range_from >= 0 || peek(1) != '.') fail_here("expected one '..' between two weekdays");
        range_from = day;
        pos_ += 2;
      } else if (peek() == '-') {
        if (range_from >= 0) fail_here("expected one '-' between two weekdays");
        range_from = day;
        pos_ += 1;
      } else if (peek() == ',') {
        range_from = -1;
        pos_ += 1;
      }
      if (peek() == '\0' || peek() == ' ') {
        if (range_from >= 0) fail_here("a weekday range needs an end");
        return done();  // a trailing comma is allowed, as systemd allows it
      }
    }
  }

  int number() {
    if (!std::isdigit(static_cast<unsigned char>(peek()))) fail_here("expected a number");
    long long v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + (peek() - '0');
      if (v > INT_MAX) fail_here("number too large");
      ++pos_;
    }
    return static_cast<int>(v);
  }

  // '*' or a comma-separated list of start[..stop][/repeat].
  Chain chain(bool seconds) {
    if (peek() == '*') {
      ++pos_;
      return seconds ? Chain{{0, -1, 1}} : Chain{};
    }
    Chain out;
    for (;;) {
      Component c;
      c.start = number();
      if (peek() == '.' && peek(1) == '.') {
        pos_ += 2;
        c.stop = number();
        c.repeat = 1;
      }
      if (peek() == '.' && seconds) fail_here("fractions of a second are not supported");
      if (peek() == '/') {
        ++pos_;
        c.repeat = number();
        if (c.repeat == 0) fail_here("a repetition of 0");
      }
      const char next = peek();
      if (next != '\0' && next != ' ' && next != ',' && next != '-' && next != '~' && next != ':')
        fail_here("unexpected character '" + std::string(1, next) + "'");
      out.push_back(c);
      if (peek() != ',') return out;
      ++pos_;
    }
  }

  // YEAR-MONTH-DAY or MONTH-DAY (either may use '~': days from the month's end). Returns false when
  // what follows is a time instead (the cursor is then left where it was).
  bool date() {
    const std::size_t start = pos_;
    if (peek() == '\0') return false;
    Chain first = chain(false);
    if (peek() == '\0' || peek() == ':') {
      pos_ = start;
      return false;
    }
    auto separator = [&] {
      if (peek() == '~')
        out_.end_of_month = true;
      else if (peek() != '-')
        fail_here("expected '-' or '~' in the date");
      ++pos_;
    };
    separator();
    Chain second = chain(false);
    if (peek() == '\0' || peek() == ' ') {
      out_.month = std::move(first);
      out_.day = std::move(second);
    } else {
      if (out_.end_of_month) fail_here("'~' separates month and day only");
      separator();
      Chain third = chain(false);
      if (peek() != '\0' && peek() != ' ') fail_here("unexpected text after the date");
      out_.year = std::move(first);
      out_.month = std::move(second);
      out_.day = std::move(third);
    }
    while (peek() == ' ') ++pos_;
    time();
    return true;
  }

  // HOUR:MINUTE[:SECOND]; nothing at all means 00:00:00.
  void time() {
    if (peek() == '\0') {
      out_.hour = {{0, -1, 0}};
      out_.minute = {{0, -1, 0}};
      out_.second = {{0, -1, 0}};
      return;
    }
    out_.hour = chain(false);
    if (peek() != ':') fail_here("expected ':' after the hour");
    ++pos_;
    out_.minute = chain(false);
    if (peek() == '\0') {
      out_.second = {{0, -1, 0}};
      return;
    }
    if (peek() != ':') fail_here("expected ':' after the minute");
    ++pos_;
    out_.second = chain(true);
    if (peek() != '\0') fail_here("unexpected text after the time");
  }

  void normalise() {
    if (out_.weekdays <= 0 || out_.weekdays >= kAllWeekdays) out_.weekdays = -1;
    if (out_.end_of_month && out_.day.empty()) out_.end_of_month = false;
    for (auto& c : out_.year) {  // 27 -> 2027, 89 -> 1989, as systemd reads two-digit years
      for (int* v : {&c.start, &c.stop}) {
        if (*v >= 0 && *v < 70)
          *v += 2000;
        else if (*v >= 70 && *v < 100)
          *v += 1900;
      }
    }
    for (Chain* ch : {&out_.year, &out_.month, &out_.day, &out_.hour, &out_.minute, &out_.second}) {
      for (auto& c : *ch)
        if (c.stop > c.start && c.repeat > 0) c.stop -= (c.stop - c.start) % c.repeat;
      std::sort(ch->begin(), ch->end());
      ch->erase(std::unique(ch->begin(), ch->end()), ch->end());
    }
  }

  void check(const Chain& chain, int from, int to, bool end_of_month, const char* field) const {
    if (end_of_month) to -= 3;
    for (const auto& c : chain) {
      bool ok = c.start >= from && c.start <= to && c.repeat <= to - from;
      if (c.stop >= 0)
        ok = ok && c.stop >= from && c.stop <= to && c.start + c.repeat <= c.stop;
      else if (end_of_month)
        ok = ok && c.start - c.repeat >= from;
      else
        ok = ok && c.start + c.repeat <= to;
      if (!ok) refuse(text_, std::string(field) + " out of range");
    }
  }

  void validate() const {
    check(out_.year, kMinYear, kMaxYear, false, "year");
    check(out_.month, 1, 12, false, "month");
    check(out_.day, 1, 31, out_.end_of_month, "day");
    check(out_.hour, 0, 23, false, "hour");
    check(out_.minute, 0, 59, false, "minute");
    check(out_.second, 0, 59, false, "second");
  }

  std::string text_;
  std::string_view body_;
  std::size_t pos_ = 0;
  Parsed out_;
};

time_t to_time(std::tm* tm, bool utc) {
  return utc ? ::timegm(tm) : std::mktime(tm);
}

// The day `day` counted from the end of tm's month (1 = the last day), or -1 when the month is shorter.
int end_of_month_day(const std::tm& tm, bool utc, int day) {
  std::tm t = tm;
  t.tm_mon++;
  t.tm_mday = 1 - day;
  if (to_time(&t, utc) == static_cast<time_t>(-1) || t.tm_mon != tm.tm_mon) return -1;
  return t.tm_mday;
}

// The smallest value >= *val the chain allows: 0 when *val already matches, 1 when it was moved,
// -1 when there is none (the caller carries into the next larger field).
int match(const Parsed& spec, const Chain& chain, bool is_day, const std::tm& tm, int* val) {
  if (chain.empty()) return 0;
  bool found = false;
  int best = 0;
  for (const auto& c : chain) {
    int start = c.start, stop = c.stop;
    if (spec.end_of_month && is_day) {
      start = end_of_month_day(tm, spec.utc, start);
      stop = end_of_month_day(tm, spec.utc, stop);
      if (stop > 0) std::swap(start, stop);
    }
    int candidate = start;
    if (start < *val) {
      if (c.repeat <= 0) continue;
      candidate = start + c.repeat * ((*val - start + c.repeat - 1) / c.repeat);
      if (stop >= 0 && candidate > stop) continue;
    }
    if (!found || candidate < best) {
      best = candidate;
      found = true;
    }
  }
  if (!found) return -1;
  const int moved = *val != best;
  *val = best;
  return moved;
}

// 1 when tm names a real time as it stands; 0 when mktime() had to normalise it (a day 31 in a
// 30-day month, an hour in the DST gap), and tm then holds the normalised time; -1 past the last year.
int within_bounds(std::tm* tm, bool utc) {
  if (tm->tm_year + 1900 > kMaxYear) return -1;
  std::tm t = *tm;
  errno = 0;
  if (to_time(&t, utc) == static_cast<time_t>(-1) && errno != 0) return -1;
  const bool same = t.tm_year == tm->tm_year && t.tm_mon == tm->tm_mon && t.tm_mday == tm->tm_mday &&
                    t.tm_hour == tm->tm_hour && t.tm_min == tm->tm_min && t.tm_sec == tm->tm_sec;
  if (!same) *tm = t;
  return same ? 1 : 0;
}

bool weekday_matches(int weekdays, const std::tm& tm, bool utc) {
  if (weekdays < 0 || weekdays >= kAllWeekdays) return true;
  std::tm t = tm;
  if (to_time(&t, utc) == static_cast<time_t>(-1)) return false;
  const int k = t.tm_wday == 0 ? 6 : t.tm_wday - 1;
  return (weekdays & (1 << k)) != 0;
}

// Moves `c` to the first time at or after it that the spec matches; `fraction` says the start lies
// inside its second (so that second itself is already past). False when no such time exists.
bool find_next(const Parsed& spec, std::tm& c, bool fraction) {
  auto clear_below = [&](int* from) {
    int* fields[] = {&c.tm_mon, &c.tm_mday, &c.tm_hour, &c.tm_min, &c.tm_sec};
    bool on = false;
    for (int* f : fields) {
      if (on) *f = (f == &c.tm_mday) ? 1 : 0;
      if (f == from) on = true;
    }
    fraction = false;
  };
  for (;;) {
    // Normalise, then let every later mktime() decide DST itself, as systemd does (tm_isdst = -1).
    to_time(&c, spec.utc);
    c.tm_isdst = -1;

    int year = c.tm_year + 1900;
    int r = match(spec, spec.year, false, c, &year);
    c.tm_year = year - 1900;
    if (r > 0) {
      c.tm_mon = 0;
      clear_below(&c.tm_mon);
    }
    if (r < 0 || within_bounds(&c, spec.utc) <= 0) return false;

    int month = c.tm_mon + 1;
    r = match(spec, spec.month, false, c, &month);
    c.tm_mon = month - 1;
    if (r > 0) clear_below(&c.tm_mon);
    if (r < 0 || (r = within_bounds(&c, spec.utc)) < 0) {
      c.tm_year++;
      c.tm_mon = 0;
      clear_below(&c.tm_mon);
      continue;
    }
    if (r == 0) continue;

    r = match(spec, spec.day, true, c, &c.tm_mday);
    if (r > 0) clear_below(&c.tm_mday);
    if (r < 0 || (r = within_bounds(&c, spec.utc)) < 0) {
      c.tm_mon++;
      c.tm_mday = 1;
      clear_below(&c.tm_mday);
      continue;
    }
    if (r == 0) continue;

    if (!weekday_matches(spec.weekdays, c, spec.utc)) {
      c.tm_mday++;
      clear_below(&c.tm_mday);
      continue;
    }

    r = match(spec, spec.hour, false, c, &c.tm_hour);
    if (r > 0) clear_below(&c.tm_hour);
    if (r < 0 || (r = within_bounds(&c, spec.utc)) < 0) {
      c.tm_mday++;
      c.tm_hour = 0;
      clear_below(&c.tm_hour);
      continue;
    }
    if (r == 0) continue;  // the hour fell into a DST gap: start again from the normalised time

    r = match(spec, spec.minute, false, c, &c.tm_min);
    if (r > 0) clear_below(&c.tm_min);
    if (r < 0 || (r = within_bounds(&c, spec.utc)) < 0) {
      c.tm_hour++;
      c.tm_min = 0;
      clear_below(&c.tm_min);
      continue;
    }
    if (r == 0) continue;

    int second = c.tm_sec + (fraction ? 1 : 0);
    r = match(spec, spec.second, false, c, &second);
    c.tm_sec = second;
    fraction = false;
    if (r < 0 || (r = within_bounds(&c, spec.utc)) < 0) {
      c.tm_min++;
      c.tm_sec = 0;
      continue;
    }
    if (r == 0) continue;
    return true;
  }
}

}  // namespace

CalendarSpec parse_calendar(const std::string& text) {
  std::string trimmed = text;
  trimmed.erase(0, trimmed.find_first_not_of(" \t"));
  trimmed.erase(trimmed.find_last_not_of(" \t") + 1);
  if (trimmed.empty()) refuse(text, "empty");
  CalendarSpec spec;
  spec.text = text;
  try {
    spec.parsed = std::make_shared<const Parsed>(Parser(trimmed).parse());
  } catch (const InputError&) {
    // "daily Europe/Berlin" or "02:00 CET": say that the zone is the problem, not the syntax.
    const auto space = trimmed.rfind(' ');
    if (space != std::string::npos && std::isalpha(static_cast<unsigned char>(trimmed[space + 1]))) {
      bool rest_parses = true;
      try {
        Parser(trimmed.substr(0, space)).parse();
      } catch (const InputError&) {
        rest_parses = false;
      }
      if (rest_parses)
        refuse(text,
               "time zone '" + trimmed.substr(space + 1) +
                   "' is not supported: schedules are in local time (the daemon's TZ) or end in \" UTC\"");
    }
    throw;
  }
  return spec;
}

std::optional<std::chrono::system_clock::time_point> next_elapse(
    const CalendarSpec& spec, std::chrono::system_clock::time_point after) {
  using namespace std::chrono;
  // localtime_r() need not re-read TZ; tzset() makes a changed TZ (tests, a daemon restarted after a
  // zone change) count, as mktime() already does.
  ::tzset();
  if (!spec.parsed) throw Error("next_elapse: calendar spec '" + spec.text + "' was not parsed");
  // Strictly after: one microsecond later, systemd's resolution.
  const auto us = floor<microseconds>(after).time_since_epoch().count() + 1;
  const auto secs = static_cast<time_t>(us / 1000000);
  const bool fraction = us % 1000000 != 0;
  std::tm tm{};
  if (spec.parsed->utc ? ::gmtime_r(&secs, &tm) == nullptr : ::localtime_r(&secs, &tm) == nullptr)
    return std::nullopt;
  if (!find_next(*spec.parsed, tm, fraction)) return std::nullopt;
  const time_t t = to_time(&tm, spec.parsed->utc);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return system_clock::time_point(seconds(t));
}

}  // namespace schedlab
