#include "workloads/chat/chat.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/histogram.hpp"
#include "workloads/chat/room_lock.hpp"
#include "workloads/common/child_group.hpp"
#include "workloads/common/placement.hpp"
#include "workloads/common/socket_io.hpp"
#include "workloads/common/task_setup.hpp"

namespace schedlab {
namespace {

using chat::LockKind;
using chat::RoomGuard;
using chat::RoomLock;

constexpr std::int64_t kMaxMessageBytes = 1 << 20;
// Descriptors each process needs beyond one per connection (stdio, pipes, the listener, ...).
constexpr long kSpareDescriptors = 64;

struct ChatOptions {
  int rooms, users, messages, message_bytes, port, nice;
  LockKind lock;
  double rate, max_duration_s;
  Placement placement;
  SchedPolicy policy;
  int connections() const { return rooms * users; }
  bool open_loop() const { return rate > 0; }
};

ChatOptions chat_options(const ParamValues& p) {
  return {p.at("rooms").get<int>(),
          p.at("users").get<int>(),
          p.at("messages").get<int>(),
          p.at("message_bytes").get<int>(),
          p.at("port").get<int>(),
          p.at("nice").get<int>(),
          chat::parse_lock_kind(p.at("lock").get<std::string>()),
          p.at("rate").get<double>(),
          p.at("max_duration_s").get<double>(),
          parse_placement(p.at("placement").get<std::string>()),
          parse_policy(p.at("policy").get<std::string>())};
}

// Every message on the wire starts with this header; `body_bytes` of text follow.
enum class Kind : std::uint32_t { kHello = 1, kGo = 2, kChat = 3 };
struct Header {
  std::uint32_t body_bytes;
  Kind kind;
  std::uint32_t room;
  std::uint32_t sender;  // the user's number, room * users + index in the room
  std::uint32_t seq;     // the sender's message number, from 0
  std::uint32_t reserved;
  std::int64_t stamp_ns;  // CLOCK_MONOTONIC: when it was sent (closed loop) or due (open loop)
};
static_assert(sizeof(Header) == 32);

// Server and client processes: the server is task 0, the clients task 1.
std::vector<int> process_cpus(const ChatOptions& o, const WorkloadContext& ctx) {
  if (o.placement == Placement::kSameThread)
    throw InputError("chat.placement: same-thread applies to tbench only");
  return assign_cpus(o.placement, 2, ctx.topology, ctx.allowed_cpus);
}

// ---- server: one thread per connection, a broadcast under the room's lock ----

struct Room {
  explicit Room(LockKind kind) : lock(kind) {}
  RoomLock lock;
  std::vector<int> members;  // connection descriptors, guarded by `lock`
};

struct ServerTally {
  std::atomic<std::uint64_t> yields{0}, broadcasts{0}, writes{0};
};

void serve_connection(int fd, const ChatOptions& o, std::vector<std::unique_ptr<Room>>& rooms,
                      std::latch& joined, ServerTally& tally) {
  std::uint64_t yields = 0, broadcasts = 0, writes = 0;
  Header h{};
  if (!read_exact(fd, &h, sizeof h) || h.kind != Kind::kHello || h.room >= rooms.size())
    throw Error("a connection did not introduce itself with a valid room");
  Room& room = *rooms[h.room];
  {
    RoomGuard g(room.lock, yields);
    room.members.push_back(fd);
  }
  // Nobody may speak before every member is in its room, or early messages would miss someone.
  joined.arrive_and_wait();
  {
    // Under the lock: another thread's broadcast may already be writing to this socket.
    RoomGuard g(room.lock, yields);
    Header go{0, Kind::kGo, h.room, h.sender, 0, 0, monotonic_ns()};
    write_exact(fd, &go, sizeof go);
  }
  std::vector<char> msg(sizeof(Header) + static_cast<std::size_t>(o.message_bytes));
  for (;;) {
    if (!read_exact(fd, msg.data(), sizeof(Header))) break;  // the user has left
    Header m;
    std::memcpy(&m, msg.data(), sizeof m);
    if (m.kind != Kind::kChat || m.body_bytes != static_cast<std::uint32_t>(o.message_bytes))
      throw Error("malformed chat message from user " + std::to_string(m.sender));
    if (!read_exact(fd, msg.data() + sizeof m, m.body_bytes))
      throw Error("connection closed inside a message");
    RoomGuard g(room.lock, yields);
    for (int member : room.members) {
      write_exact(member, msg.data(), msg.size());
      ++writes;
    }
    ++broadcasts;
  }
  tally.yields += yields;
  tally.broadcasts += broadcasts;
  tally.writes += writes;
}

std::string server_main(Fd listener, const ChatOptions& o, int cpu) {
  setup_current_thread({"schedlab-chatsv", cpu, &o.policy, o.nice});
  std::vector<std::unique_ptr<Room>> rooms;
  for (int r = 0; r < o.rooms; ++r) rooms.push_back(std::make_unique<Room>(o.lock));
  std::latch joined(o.connections());
  ServerTally tally;
  std::mutex m;
  std::string first_error;
  std::vector<Fd> conns;
  std::vector<std::thread> threads;
  // Connections stay open until every thread has finished: a finished user's descriptor is still
  // in its room's member list.
  conns.reserve(static_cast<std::size_t>(o.connections()));
  for (int i = 0; i < o.connections(); ++i) {
    int fd;
    do {
      fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) throw SystemError("accept", errno);
    conns.emplace_back(fd);
    set_tcp_nodelay(fd);
    threads.emplace_back([&, fd] {
      name_current_thread("schedlab-chatsv");
      try {
        serve_connection(fd, o, rooms, joined, tally);
      } catch (const std::exception& e) {
        std::lock_guard lock(m);
        if (first_error.empty()) first_error = e.what();
      }
    });
  }
  listener.reset();
  for (auto& t : threads) t.join();
  if (!first_error.empty()) throw Error("server: " + first_error);
  nlohmann::json s = {{"yields", tally.yields.load()},
                      {"broadcasts", tally.broadcasts.load()},
                      {"socket_writes", tally.writes.load()}};
  return s.dump();
}

// ---- clients: one thread per user, in one process ----

struct UserResult {
  std::vector<std::int64_t> latencies_ns;
  std::int64_t first_send_ns = 0, last_delivery_ns = 0;
  std::uint64_t deliveries = 0;
};

class User {
 public:
  User(int id, int port, const ChatOptions& o, std::int64_t deadline_ns)
      : id_(id),
        room_(id / o.users),
        o_(o),
        deadline_ns_(deadline_ns),
        next_seq_(static_cast<std::size_t>(o.users), 0) {
    conn_ = connect_to_loopback(port);
    set_tcp_nodelay(conn_.get());
    Header hello{0, Kind::kHello, static_cast<std::uint32_t>(room_), static_cast<std::uint32_t>(id_), 0, 0,
                 0};
    write_exact(conn_.get(), &hello, sizeof hello);
  }

  UserResult run() {
    // Non-blocking: a user that could not read while its write blocked would stall the server
    // thread broadcasting into its socket, holding its room's lock.
    if (::fcntl(conn_.get(), F_SETFL, O_NONBLOCK) != 0) throw SystemError("fcntl(O_NONBLOCK)", errno);
    const std::uint64_t expected =
        static_cast<std::uint64_t>(o_.users) * static_cast<std::uint64_t>(o_.messages);
    result_.latencies_ns.reserve(expected);
    // Until the server's go, the others of the room may still be joining. Messages of members that
    // were let go earlier can come before it.
    while (go_ns_ == 0) {
      check_deadline(expected);
      pollfd p{conn_.get(), POLLIN, 0};
      const int ready = ::poll(&p, 1, 100);
      if (ready < 0 && errno != EINTR) throw SystemError("poll", errno);
      if (ready > 0) receive();
    }
    const std::int64_t start_ns = go_ns_;
    result_.first_send_ns = start_ns;
    const double period_ns = o_.open_loop() ? 1e9 / o_.rate : 0;
    while (result_.deliveries < expected || sent_ < o_.messages || !out_.empty()) {
      check_deadline(expected);
      const std::int64_t now = monotonic_ns();
      int wait_ms = 100;
      if (sent_ < o_.messages && out_.empty()) {
        if (!o_.open_loop()) {
          if (!awaiting_own_) queue_message(now);
        } else {
          const auto due = start_ns + static_cast<std::int64_t>(std::llround(period_ns * sent_));
          if (now >= due)
            queue_message(due);  // latency counts from when it was due, not when it left
          else
            wait_ms = static_cast<int>(std::min<std::int64_t>(wait_ms, (due - now) / 1000000 + 1));
        }
      }
      if (!out_.empty()) flush();
      if (result_.deliveries >= expected && sent_ >= o_.messages && out_.empty()) break;
      // Sleep until there is something to read (or room to write); then one read takes what came.
      pollfd p{conn_.get(), static_cast<short>(POLLIN | (out_.empty() ? 0 : POLLOUT)), 0};
      const int ready = ::poll(&p, 1, wait_ms);
      if (ready < 0 && errno != EINTR) throw SystemError("poll", errno);
      if (ready > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) receive();
    }
    return std::move(result_);
  }

 private:
  void check_deadline(std::uint64_t expected) const {
    if (monotonic_ns() > deadline_ns_)
      throw Error("user " + std::to_string(id_) + ": " + std::to_string(result_.deliveries) + " of " +
                  std::to_string(expected) + " deliveries by the time limit");
  }

  void queue_message(std::int64_t stamp_ns) {
    Header h{static_cast<std::uint32_t>(o_.message_bytes),
             Kind::kChat,
             static_cast<std::uint32_t>(room_),
             static_cast<std::uint32_t>(id_),
             static_cast<std::uint32_t>(sent_),
             0,
             stamp_ns};
    out_.resize(sizeof h + static_cast<std::size_t>(o_.message_bytes), 'm');
    std::memcpy(out_.data(), &h, sizeof h);
    out_pos_ = 0;
    ++sent_;
    awaiting_own_ = true;
  }

  // Sends what it can; true when all of the pending message has left.
  bool flush() {
    while (out_pos_ < out_.size()) {
      ssize_t n = ::send(conn_.get(), out_.data() + out_pos_, out_.size() - out_pos_, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
      if (n < 0) throw SystemError("user " + std::to_string(id_) + ": send", errno);
      out_pos_ += static_cast<std::size_t>(n);
    }
    out_.clear();
    out_pos_ = 0;
    return true;
  }

  // Reads what is there (one read unless it filled the buffer: poll said there is data, and a
  // read that only finds the socket empty would be a system call for nothing) and takes every
  // complete message.
  void receive() {
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(conn_.get(), buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0) throw SystemError("user " + std::to_string(id_) + ": recv", errno);
      if (n == 0) throw Error("user " + std::to_string(id_) + ": the server closed the connection");
      in_.append(buf, static_cast<std::size_t>(n));
      if (static_cast<std::size_t>(n) < sizeof buf) break;
    }
    std::size_t pos = 0;
    const std::int64_t now = monotonic_ns();
    while (in_.size() - pos >= sizeof(Header)) {
      Header h;
      std::memcpy(&h, in_.data() + pos, sizeof h);
      if (h.body_bytes > static_cast<std::uint32_t>(o_.message_bytes))
        throw Error("user " + std::to_string(id_) + ": malformed message (" + std::to_string(h.body_bytes) +
                    " bytes)");
      const std::size_t size = sizeof h + h.body_bytes;
      if (in_.size() - pos < size) break;
      if (h.kind == Kind::kGo && go_ns_ == 0)
        go_ns_ = now;
      else
        deliver(h, now);
      pos += size;
    }
    in_.erase(0, pos);
  }

  // Every member gets every message of its room exactly once, each sender's in order.
  void deliver(const Header& h, std::int64_t now) {
    const auto who = "user " + std::to_string(id_) + ": ";
    if (h.kind != Kind::kChat || h.body_bytes != static_cast<std::uint32_t>(o_.message_bytes))
      throw Error(who + "malformed message");
    if (static_cast<int>(h.room) != room_ || static_cast<int>(h.sender) / o_.users != room_)
      throw Error(who + "got a message of room " + std::to_string(h.room) + " from user " +
                  std::to_string(h.sender));
    auto& next = next_seq_[static_cast<std::size_t>(static_cast<int>(h.sender) % o_.users)];
    if (h.seq != next)
      throw Error(who + "from user " + std::to_string(h.sender) + " got message " + std::to_string(h.seq) +
                  ", expected " + std::to_string(next) +
                  (h.seq < next ? " (a duplicate)" : " (one was lost)"));
    ++next;
    ++result_.deliveries;
    result_.latencies_ns.push_back(now - h.stamp_ns);
    result_.last_delivery_ns = now;
    if (static_cast<int>(h.sender) == id_) awaiting_own_ = false;
  }

  int id_, room_;
  const ChatOptions& o_;
  std::int64_t deadline_ns_;
  Fd conn_;
  std::vector<std::uint32_t> next_seq_;
  std::string out_, in_;
  std::size_t out_pos_ = 0;
  int sent_ = 0;
  bool awaiting_own_ = false;
  std::int64_t go_ns_ = 0;  // when the server's go arrived
  UserResult result_;
};

std::string clients_main(int port, const ChatOptions& o, int cpu, std::int64_t deadline_ns) {
  setup_current_thread({"schedlab-chatcl", cpu, &o.policy, o.nice});
  const auto n = static_cast<std::size_t>(o.connections());
  std::vector<UserResult> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      name_current_thread("schedlab-chatcl");
      try {
        User user(static_cast<int>(i), port, o, deadline_ns);
        results[i] = user.run();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::int64_t first = results[0].first_send_ns, last = 0;
  std::uint64_t deliveries = 0;
  std::vector<std::int64_t> samples;
  for (auto& r : results) {
    first = std::min(first, r.first_send_ns);
    last = std::max(last, r.last_delivery_ns);
    deliveries += r.deliveries;
    samples.insert(samples.end(), r.latencies_ns.begin(), r.latencies_ns.end());
  }
  return pack_report({{"deliveries", deliveries}, {"elapsed_s", static_cast<double>(last - first) / 1e9}},
                     samples);
}

}  // namespace

std::string ChatWorkload::summary() const {
  return "VolanoMark-like chat: R rooms x U users, a server thread per connection, each message broadcast to "
         "its "
         "room under a mutex or a sched_yield() spin lock";
}

std::string ChatWorkload::experiment() const {
  return "VolanoMark lost 80% of its throughput under CFS (2.6.23, 2007): its JVM's locks spun on "
         "sched_yield(), "
         "which CFS had made a near no-op.";
}

std::vector<ParamSpec> ChatWorkload::params() const {
  std::vector<ParamSpec> p;
  p.push_back({"rooms", ParamKind::kInteger, 10, "", "chat rooms", 1.0, 1000.0, {}});
  p.push_back({"users", ParamKind::kInteger, 20, "", "users (client connections) per room", 1.0, 1000.0, {}});
  p.push_back({"messages", ParamKind::kInteger, 100, "", "messages each user sends", 1.0, 1e7, {}});
  p.push_back({"message_bytes",
               ParamKind::kInteger,
               100,
               "bytes",
               "text bytes of a message (plus a 32-byte header)",
               1.0,
               static_cast<double>(kMaxMessageBytes),
               {}});
  p.push_back({"lock",
               ParamKind::kChoice,
               "mutex",
               "",
               "what guards a room's member list during a broadcast: a futex mutex, or a spin lock calling "
               "sched_yield() while it waits",
               std::nullopt,
               std::nullopt,
               {"mutex", "yield-spin"}});
  p.push_back(
      {"rate",
       ParamKind::kNumber,
       0.0,
       "msg/s",
       "open loop: messages per second per user on a fixed schedule, latency from the scheduled time; 0: "
       "closed loop (the next message after the user's own came back), as VolanoMark",
       0.0,
       1e6,
       {}});
  p.push_back({"max_duration_s",
               ParamKind::kNumber,
               100.0,
               "s",
               "time limit: a run not finished by then is killed and failed",
               1.0,
               86400.0,
               {}});
  p.push_back(
      {"port", ParamKind::kInteger, 0, "", "TCP port on 127.0.0.1 (0: any free port)", 0.0, 65535.0, {}});
  p.push_back(placement_param("the server process (anchor) and the client process (partner)"));
  p.push_back(policy_param("the server and client threads"));
  p.push_back(nice_param("the server and client threads"));
  return p;
}

std::vector<MetricDesc> ChatWorkload::metrics() const {
  const auto higher = Direction::kHigherIsBetter, lower = Direction::kLowerIsBetter;
  return {
      {"messages_s", "msg/s", higher, true,
       "deliveries per second, first send to last delivery (VolanoMark's throughput figure)"},
      {"latency_p50_us", "us", lower, false,
       "median delivery latency: sent (or due, open loop) to read by a member"},
      {"latency_p99_us", "us", lower, true, "99th percentile of delivery latency"},
      {"deliveries", "count", higher, false,
       "messages read by members: rooms x users x users x messages when all went"},
      {"operations", "count", higher, false, "= deliveries (counters per operation divide by it)"},
      {"elapsed_s", "s", lower, false, "first send to last delivery"},
      {"context_switches", "count", lower, false,
       "voluntary + involuntary switches of the server and client processes over their lives (wait4)"},
      {"context_switches_per_delivery", "count", lower, false, "context_switches / deliveries"},
      {"yields", "count", lower, false,
       "sched_yield() calls the room locks made while waiting (yield-spin only)"},
  };
}

std::map<std::string, std::map<std::string, std::string>> ChatWorkload::quick_instances() const {
  return {{"chat", {{"messages", "20"}}}, {"chat-yield-spin", {{"messages", "20"}, {"lock", "yield-spin"}}}};
}

void ChatWorkload::validate(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto o = chat_options(params);
  process_cpus(o, ctx);
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      static_cast<long>(nofile.rlim_cur) < o.connections() + kSpareDescriptors)
    throw InputError("chat: " + std::to_string(o.rooms) + " rooms x " + std::to_string(o.users) +
                     " users need " + std::to_string(o.connections() + kSpareDescriptors) +
                     " descriptors per process, the limit is " + std::to_string(nofile.rlim_cur) +
                     " (ulimit -n)");
  check_port_free(o.port, "chat.port");
}

WorkloadResult ChatWorkload::run(const ParamValues& params, const WorkloadContext& ctx) {
  const auto o = chat_options(params);
  const auto cpus = process_cpus(o, ctx);
  Fd listener = listen_on_loopback(o.port, o.connections() + 16, "chat server");
  const int port = local_port(listener.get());
  const std::int64_t deadline_ns = monotonic_ns() + static_cast<std::int64_t>(o.max_duration_s * 1e9);
  ChildGroup group;
  group.spawn("chat server", [&] { return server_main(std::move(listener), o, cpus[0]); });
  group.spawn("chat clients", [&] {
    listener.reset();  // the server's, inherited
    return clients_main(port, o, cpus[1], deadline_ns);
  });
  listener.reset();
  // The children give up at the deadline themselves; a second more covers their reports.
  const auto reports = group.wait_all(deadline_ns + 1000000000LL);

  const auto server = nlohmann::json::parse(reports[0].report);
  nlohmann::json summary;
  std::vector<std::int64_t> samples;
  unpack_report(reports[1].report, reports[1].name, summary, samples);
  LatencyHistogram latency;
  for (auto ns : samples) latency.add(ns);
  const auto deliveries = summary.at("deliveries").get<std::uint64_t>();
  const auto expected = static_cast<std::uint64_t>(o.rooms) * o.users * o.users * o.messages;
  if (deliveries != expected)
    throw Error("delivered " + std::to_string(deliveries) + " messages, expected " +
                std::to_string(expected));
  const double elapsed_s = summary.at("elapsed_s").get<double>();
  long switches = 0;
  nlohmann::json processes = nlohmann::json::object();
  for (const auto& r : reports) {
    switches += r.usage.ru_nvcsw + r.usage.ru_nivcsw;
    processes[r.name] = {{"voluntary_switches", r.usage.ru_nvcsw},
                         {"involuntary_switches", r.usage.ru_nivcsw}};
  }

  WorkloadResult result;
  auto& m = result.metrics;
  m["messages_s"] = {static_cast<double>(deliveries) / elapsed_s, "msg/s"};
  m["latency_p50_us"] = {latency.percentile_us(0.50), "us"};
  m["latency_p99_us"] = {latency.percentile_us(0.99), "us"};
  m["deliveries"] = {static_cast<double>(deliveries), "count"};
  m["operations"] = {static_cast<double>(deliveries), "count"};
  m["elapsed_s"] = {elapsed_s, "s"};
  m["context_switches"] = {static_cast<double>(switches), "count"};
  m["context_switches_per_delivery"] = {static_cast<double>(switches) / static_cast<double>(deliveries),
                                        "count"};
  m["yields"] = {server.at("yields").get<double>(), "count"};
  auto& d = result.details;
  d["server"] = server;
  d["processes"] = processes;
  d["cpus"] = cpus;
  d["port"] = port;
  d["mode"] = o.open_loop() ? "open-loop" : "closed-loop";
  d["histogram"] = latency.to_json();
  return result;
}

}  // namespace schedlab
