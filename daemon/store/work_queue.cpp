#include "daemon/store/work_queue.hpp"

#include <unistd.h>

#include <cstdlib>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "daemon/store/pg.hpp"
#include "daemon/store/postgres_store.hpp"

namespace schedlab {
namespace {

// A worker's names, any of which a step's pattern may match ($2 .. $5 of the statements below).
constexpr const char* kMatchesWorker =
    "($2 LIKE q.hosts_like ESCAPE '\\' OR $3 LIKE q.hosts_like ESCAPE '\\' OR "
    "($4 <> '' AND $4 LIKE q.hosts_like ESCAPE '\\') OR $5 LIKE q.hosts_like ESCAPE '\\')";

std::string submitter() {
  char name[256] = {};
  const char* user = std::getenv("SUDO_USER");
  if (!user) user = std::getenv("USER");
  ::gethostname(name, sizeof name - 1);
  return std::string(user ? user : "?") + "@" + name;
}

}  // namespace

WorkQueue::WorkQueue(const std::string& url) : db_(std::make_unique<pg::Connection>(url)) {
  migrate_store(*db_);
}

WorkQueue::~WorkQueue() = default;

void WorkQueue::check_hosts_pattern(const std::string& pattern) {
  if (pattern.empty()) throw InputError("--hosts: empty (\"*\" is every host)");
  if (pattern.find_first_of("[]") != std::string::npos)
    throw InputError("--hosts " + pattern + ": [ ] classes are not supported; use * and ?");
  for (char c : pattern)
    if (c <= ' ' || c == '\'' || c == '"')
      throw InputError("--hosts " + pattern + ": a host or class pattern has no spaces or quotes");
}

std::int64_t WorkQueue::submit(const std::string& campaign, const std::string& content_hash,
                               const std::string& campaign_file, const std::string& campaign_text,
                               const std::string& hosts, const std::vector<SubmittedStep>& steps) {
  check_hosts_pattern(hosts);
  pg::Transaction tx(*db_);
  const auto id =
      db_->query(
             "INSERT INTO queue_submissions (campaign, content_hash, campaign_file, campaign_text, "
             "hosts, submitted_at, submitted_by, steps_total) VALUES ($1, $2, $3, $4, $5, $6, $7, "
             "$8) RETURNING id",
             campaign, content_hash, campaign_file, campaign_text, hosts, utc_timestamp(), submitter(),
             std::int64_t(steps.size()))
          .integer(0, 0);
  for (const auto& s : steps)
    db_->query(
        "INSERT INTO queue_steps (submission_id, step_key, step_index, hosts_like, status, attempts) "
        "VALUES ($1, $2, $3, $4, 'queued', 0)",
        id, s.key, std::int64_t{s.index}, pg::like_pattern(hosts));
  tx.commit();
  return id;
}

void WorkQueue::heartbeat(const QueueWorker& w) {
  db_->query(
      "INSERT INTO queue_workers (host, class, label, shape, seen_at) VALUES ($1, $2, $3, $4, now()) "
      "ON CONFLICT (host) DO UPDATE SET class = $2, label = $3, shape = $4, seen_at = now()",
      w.host, w.class_name, w.label, w.shape);
}

std::optional<QueueClaim> WorkQueue::claim(const QueueWorker& w, double lease_s) {
  // The subquery locks the one row it picks and skips rows other boxes are claiming this instant; the
  // UPDATE then holds it. A claim whose lease ran out is taken over (its box died or lost the database).
  auto r = db_->query(std::string(R"(
    WITH next AS (
      SELECT q.submission_id, q.step_key FROM queue_steps q
      WHERE (q.status = 'queued' OR (q.status = 'claimed' AND q.lease_until < now())) AND )") +
                          kMatchesWorker + R"(
      ORDER BY q.submission_id, q.step_index LIMIT 1 FOR UPDATE SKIP LOCKED)
    UPDATE queue_steps s SET status = 'claimed', claimed_by = $1, attempts = s.attempts + 1,
      lease_until = now() + make_interval(secs => $6), started_at = $7, attempt_dir = '',
      reclaimed_from = CASE WHEN s.status = 'claimed' THEN s.claimed_by ELSE '' END
    FROM next WHERE s.submission_id = next.submission_id AND s.step_key = next.step_key
    RETURNING s.submission_id, s.step_key, s.step_index, s.attempts, s.reclaimed_from)",
                      w.host, w.host, w.class_name, w.label, w.shape, lease_s, utc_timestamp());
  if (r.rows() == 0) return std::nullopt;
  QueueClaim c;
  c.submission = r.integer(0, 0);
  c.key = r.text(0, 1);
  c.index = static_cast<int>(r.integer(0, 2));
  c.attempt = static_cast<int>(r.integer(0, 3));
  c.reclaimed_from = r.text(0, 4);
  add_submission(c);
  return c;
}

void WorkQueue::add_submission(QueueClaim& c) {
  auto sub = db_->query("SELECT campaign, campaign_file, campaign_text FROM queue_submissions WHERE id = $1",
                        c.submission);
  c.campaign = sub.text(0, 0);
  c.campaign_file = sub.text(0, 1);
  c.campaign_text = sub.text(0, 2);
}

std::vector<QueueClaim> WorkQueue::own_claims(const std::string& host) {
  auto r = db_->query(
      "SELECT submission_id, step_key, step_index, attempts, reclaimed_from, attempt_dir FROM queue_steps "
      "WHERE claimed_by = $1 AND status = 'claimed' ORDER BY submission_id, step_index",
      host);
  std::vector<QueueClaim> out;
  for (int i = 0; i < r.rows(); ++i) {
    QueueClaim c;
    c.submission = r.integer(i, 0);
    c.key = r.text(i, 1);
    c.index = static_cast<int>(r.integer(i, 2));
    c.attempt = static_cast<int>(r.integer(i, 3));
    c.reclaimed_from = r.text(i, 4);
    c.attempt_dir = r.text(i, 5);
    add_submission(c);
    out.push_back(std::move(c));
  }
  return out;
}

namespace {
constexpr const char* kStillMine =
    "submission_id = $1 AND step_key = $2 AND claimed_by = $3 AND attempts = $4 AND status = 'claimed'";
}

bool WorkQueue::renew(const QueueClaim& c, const std::string& host, double lease_s) {
  return db_->query(
                std::string("UPDATE queue_steps SET lease_until = now() + make_interval(secs => $5) WHERE ") +
                    kStillMine,
                c.submission, c.key, host, std::int64_t{c.attempt}, lease_s)
             .affected() == 1;
}

void WorkQueue::set_attempt_dir(const QueueClaim& c, const std::string& host,
                                const std::filesystem::path& dir) {
  db_->query(std::string("UPDATE queue_steps SET attempt_dir = $5 WHERE ") + kStillMine, c.submission, c.key,
             host, std::int64_t{c.attempt}, dir.string());
}

bool WorkQueue::finish(const QueueClaim& c, const std::string& host, bool ok,
                       const std::optional<std::filesystem::path>& bundle_path, const Bundle* bundle,
                       const std::string& reason) {
  pg::Transaction tx(*db_);
  const auto ended =
      db_->query(std::string(
                     "UPDATE queue_steps SET status = $5, bundle_path = $6, reason = $7, finished_at = $8, "
                     "lease_until = NULL WHERE ") +
                     kStillMine,
                 c.submission, c.key, host, std::int64_t{c.attempt}, ok ? "finished" : "failed",
                 bundle_path ? bundle_path->string() : std::string(), reason, utc_timestamp())
          .affected();
  if (ended != 1) return false;  // rolled back: another box holds the step now
  if (bundle_path && bundle) insert_bundle_in(*db_, *bundle_path, *bundle);
  tx.commit();
  return true;
}

void WorkQueue::release(const QueueClaim& c, const std::string& host, const std::string& reason) {
  db_->query(std::string("UPDATE queue_steps SET status = 'queued', claimed_by = '', lease_until = NULL, "
                         "reason = $5 WHERE ") +
                 kStillMine,
             c.submission, c.key, host, std::int64_t{c.attempt}, reason);
}

std::vector<std::string> WorkQueue::release_own(const std::string& host, const std::string& reason) {
  auto r = db_->query(
      "UPDATE queue_steps SET status = 'queued', claimed_by = '', lease_until = NULL, reason = $2 "
      "WHERE claimed_by = $1 AND status = 'claimed' RETURNING attempt_dir",
      host, reason);
  std::vector<std::string> dirs;
  for (int i = 0; i < r.rows(); ++i)
    if (!r.text(i, 0).empty()) dirs.push_back(r.text(i, 0));
  return dirs;
}

int WorkQueue::open_steps_for(const QueueWorker& w) {
  return static_cast<int>(
      db_->query(std::string("SELECT count(*) FROM queue_steps q WHERE q.status IN ('queued', "
                             "'claimed') AND $1::text = $1 AND ") +
                     kMatchesWorker,
                 w.host, w.host, w.class_name, w.label, w.shape)
          .integer(0, 0));
}

std::vector<QueueSummary> WorkQueue::summary(double seen_within_s) {
  auto r = db_->query(R"(
    SELECT s.id, s.campaign, s.hosts, s.submitted_at, s.steps_total,
      count(*) FILTER (WHERE q.status = 'queued'), count(*) FILTER (WHERE q.status = 'claimed'),
      count(*) FILTER (WHERE q.status = 'finished'), count(*) FILTER (WHERE q.status = 'failed'),
      coalesce(string_agg(DISTINCT q.claimed_by, ' ') FILTER (WHERE q.status = 'claimed'), ''),
      coalesce((SELECT string_agg(w.host, ' ' ORDER BY w.host) FROM queue_workers w
                WHERE w.seen_at > now() - make_interval(secs => $1)
                  AND (w.host LIKE min(q.hosts_like) ESCAPE '\' OR w.class LIKE min(q.hosts_like) ESCAPE '\'
                       OR (w.label <> '' AND w.label LIKE min(q.hosts_like) ESCAPE '\')
                       OR w.shape LIKE min(q.hosts_like) ESCAPE '\')), '')
    FROM queue_submissions s JOIN queue_steps q ON q.submission_id = s.id
    GROUP BY s.id ORDER BY s.id)",
                      seen_within_s);
  auto words = [](const std::string& text) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < text.size()) {
      const auto end = text.find(' ', at);
      out.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 1;
    }
    return out;
  };
  std::vector<QueueSummary> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({r.integer(i, 0), r.text(i, 1), r.text(i, 2), r.text(i, 3),
                   static_cast<int>(r.integer(i, 4)), static_cast<int>(r.integer(i, 5)),
                   static_cast<int>(r.integer(i, 6)), static_cast<int>(r.integer(i, 7)),
                   static_cast<int>(r.integer(i, 8)), words(r.text(i, 9)), words(r.text(i, 10))});
  return out;
}

}  // namespace schedlab
