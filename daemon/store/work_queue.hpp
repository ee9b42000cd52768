#pragma once
// The lab's shared work queue, in the PostgreSQL store's database: `schedlab submit` puts a campaign's
// steps in it for a class of hosts; each box's `schedlab daemon --queue` claims the next step its class
// may run (SELECT ... FOR UPDATE SKIP LOCKED: boxes never wait on each other's claims) under a lease it
// renews while the step runs. A step whose lease ran out (its box died) is claimed again by the next box
// that asks. A step's end is recorded, and its bundle indexed, in one transaction and only by the claim
// that still holds it (same box, same attempt): every step is done exactly once, every bundle indexed once.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace schedlab {

namespace pg {
class Connection;
}

// Who asks for work: its name (the hostname, or --host) and its class's names (host_class.hpp), each of
// which a submission's host pattern may match.
struct QueueWorker {
  std::string host;
  std::string class_name;
  std::string label;
  std::string shape;
};

struct SubmittedStep {
  std::string key;
  int index = 0;
};

struct QueueClaim {
  std::int64_t submission = 0;
  std::string key;
  int index = 0;
  int attempt = 0;             // this claim's attempt: 1, or more after a reclaim
  std::string reclaimed_from;  // the box whose lease had run out, "" for a fresh step
  std::string campaign;
  std::string campaign_file;  // the submitted file's name, for errors and logs
  std::string campaign_text;  // its bytes, loaded by the worker as the campaign
  std::string attempt_dir;    // set_attempt_dir's; "" until the attempt's directory is made
};

// One submission's steps by status, for `schedlab queue`.
struct QueueSummary {
  std::int64_t submission = 0;
  std::string campaign, hosts, submitted_at;
  int total = 0, queued = 0, claimed = 0, finished = 0, failed = 0;
  std::vector<std::string> claimed_by;  // boxes holding its running steps
  std::vector<std::string> able_hosts;  // workers seen whose class matches `hosts`
};

class WorkQueue {
 public:
  // Connects (DatabaseUnavailable when the server does not answer) and creates or upgrades the schema.
  explicit WorkQueue(const std::string& url);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Glob pattern of host names or class names ("*", "big-numa", "2s-*-smt-*"); InputError for an empty
  // one or one with [ ] classes (not supported).
  static void check_hosts_pattern(const std::string& pattern);

  // Every step in one transaction; returns the submission's id.
  std::int64_t submit(const std::string& campaign, const std::string& content_hash,
                      const std::string& campaign_file, const std::string& campaign_text,
                      const std::string& hosts, const std::vector<SubmittedStep>& steps);

  // The worker is seen now (its class is what `queue` matches waiting steps against).
  void heartbeat(const QueueWorker& worker);
  // The oldest submission's next step this worker may run, claimed for `lease_s`; nullopt when none.
  std::optional<QueueClaim> claim(const QueueWorker& worker, double lease_s);
  // Extends the lease; false when the claim is no longer this one's (reclaimed after it ran out).
  bool renew(const QueueClaim& claim, const std::string& host, double lease_s);
  // Records the attempt's directory (before its process starts: a reclaim finds what it left).
  void set_attempt_dir(const QueueClaim& claim, const std::string& host, const std::filesystem::path& dir);
  // Ends the step, with its bundle indexed in the same transaction when there is one. False (nothing
  // written) when the claim is no longer this one's.
  bool finish(const QueueClaim& claim, const std::string& host, bool ok,
              const std::optional<std::filesystem::path>& bundle_path, const Bundle* bundle,
              const std::string& reason);
  // This box's claims still held (a daemon restarted after a crash or a lab box's reboot: a staged boot's
  // step is resumed in the new kernel under the claim it made before going down).
  std::vector<QueueClaim> own_claims(const std::string& host);
  // Puts one claim of this box's back in the queue (its attempt is not resumed).
  void release(const QueueClaim& claim, const std::string& host, const std::string& reason);
  // Puts this box's own claims back in the queue (a restarted daemon: its step died with it). Returns
  // their attempt directories, to be set aside.
  std::vector<std::string> release_own(const std::string& host, const std::string& reason);
  // Steps this worker could still be given: queued, or claimed by anyone (a claim may yet run out).
  int open_steps_for(const QueueWorker& worker);

  std::vector<QueueSummary> summary(double seen_within_s);

 private:
  void add_submission(QueueClaim& claim);  // the campaign's name, file name and text

  std::unique_ptr<pg::Connection> db_;
};

}  // namespace schedlab
