#include "workloads/tbench/tbench.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/histogram.hpp"
#include "core/pipe.hpp"
#include "workloads/common/child_group.hpp"
#include "workloads/common/placement.hpp"
#include "workloads/common/socket_io.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/tbench/loadfile.hpp"

namespace schedlab {
namespace {

using tbench::Exchange;

// Beyond the measured window, how long the workload waits for its processes before it kills
// them and fails the repetition; and how long they may take to connect and get ready.
constexpr double kGraceS = 10;
constexpr double kSetupLimitS = 60;
// tbench's request and reply start with two 32-bit lengths: what follows the first word, and the
// reply's length after its first word.
constexpr std::size_t kLengthWords = 8;
constexpr std::size_t kBufferBytes = tbench::kMaxMessageBytes + kLengthWords;

struct Options {
  int clients, port, nice;
  double duration_s, warmup_s;
  Placement placement;
  SchedPolicy policy;
  std::string loadfile;
};

Options options_from(const ParamValues& p) {
  return {p.at("clients").get<int>(),
          p.at("port").get<int>(),
          p.at("nice").get<int>(),
          p.at("duration_s").get<double>(),
          p.at("warmup_s").get<double>(),
          parse_placement(p.at("placement").get<std::string>()),
          parse_policy(p.at("policy").get<std::string>()),
          p.at("loadfile").get<std::string>()};
}

tbench::Loadfile load(const Options& o) {
  return o.loadfile.empty() ? tbench::bundled_loadfile() : tbench::read_loadfile(o.loadfile);
}

// Client i is task 2i, its server thread task 2i+1: the relational placements put each client on
// the anchor CPU and its server on the partner.
std::vector<int> task_cpus(const Options& o, const WorkloadContext& ctx) {
  if (o.placement == Placement::kSameThread)
    return std::vector<int>(static_cast<std::size_t>(2 * o.clients), -1);
  return assign_cpus(o.placement, 2 * o.clients, ctx.topology, ctx.allowed_cpus);
}

// The measured window, in CLOCK_MONOTONIC (the same clock in every process).
struct Window {
  std::int64_t from_ns, to_ns;
};

// The server's side of one request already read into `buf`: the reply's length from the
// request's second word, written into the first. Returns the reply's size on the wire.
std::size_t prepare_reply(char* buf, std::size_t request_bytes) {
  if (request_bytes < kLengthWords)
    throw Error("request of " + std::to_string(request_bytes) + " bytes: no reply length");
  std::uint32_t want;
  std::memcpy(&want, buf + 4, 4);
  want = ntohl(want);
  if (want + 4 > kBufferBytes)
    throw Error("reply of " + std::to_string(want) + " bytes requested: too large");
  const std::uint32_t header = htonl(want);
  std::memcpy(buf, &header, 4);
  return want + 4;
}

// tbench_srv's loop for one connection: a length word, the rest of the request, the reply.
void serve_connection(int fd) {
  std::vector<char> buf(kBufferBytes);
  for (;;) {
    std::uint32_t len;
    if (!read_exact(fd, &len, 4)) return;  // the client has finished
    len = ntohl(len);
    if (len + 4 > kBufferBytes) throw Error("request of " + std::to_string(len) + " bytes: too large");
    std::memcpy(buf.data(), &len, 4);
    if (!read_exact(fd, buf.data() + 4, len)) throw Error("connection closed inside a request");
    write_exact(fd, buf.data(), prepare_reply(buf.data(), len + 4));
  }
}

std::string server_main(Fd listener, const Options& o, const std::vector<int>& cpus) {
  name_current_thread("schedlab-tbsrv");
  std::vector<Fd> conns;
  for (int i = 0; i < o.clients; ++i) {
    int fd;
    do {
      fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) throw SystemError("accept", errno);
    conns.emplace_back(fd);
    set_tcp_nodelay(fd);
  }
  listener.reset();
  std::mutex m;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int i = 0; i < o.clients; ++i) {
    threads.emplace_back([&, i] {
      try {
        setup_current_thread(
            {"schedlab-tbsrv", cpus[static_cast<std::size_t>(2 * i + 1)], &o.policy, o.nice});
        serve_connection(conns[static_cast<std::size_t>(i)].get());
      } catch (const std::exception& e) {
        std::lock_guard lock(m);
        if (first_error.empty()) first_error = "connection " + std::to_string(i) + ": " + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (!first_error.empty()) throw Error(first_error);
  return "{}\n";
}

double seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
}

// What one client did: in the measured window (ops, bytes, latencies) and over its whole life.
struct ClientTally {
  std::uint64_t ops_total = 0, ops = 0, bytes = 0;
  std::vector<std::int64_t> latencies_ns;

  void count(const Exchange& e, std::int64_t start_ns, std::int64_t end_ns, const Window& w) {
    ++ops_total;
    if (end_ns < w.from_ns || end_ns > w.to_ns) return;
    ++ops;
    bytes += e.payload_bytes;
    latencies_ns.push_back(end_ns - start_ns);
  }
};

void fill_request(std::vector<char>& buf, const Exchange& e) {
  const std::uint32_t words[2] = {htonl(e.request_bytes - 4), htonl(e.reply_bytes - 4)};
  std::memcpy(buf.data(), words, sizeof words);
}

void check_reply_length(std::uint32_t got, const Exchange& e) {
  if (ntohl(got) != e.reply_bytes - 4)
    throw Error("lost sync: reply length " + std::to_string(ntohl(got)) + ", expected " +
                std::to_string(e.reply_bytes - 4));
}

// One exchange as tbench's client makes it: the request in one write, the reply's length word,
// then its body dropped in the kernel (recv MSG_TRUNC).
void exchange_over_tcp(int fd, std::vector<char>& buf, const Exchange& e) {
  fill_request(buf, e);
  write_exact(fd, buf.data(), e.request_bytes);
  std::uint32_t len;
  if (!read_exact(fd, &len, 4)) throw Error("the server closed the connection");
  check_reply_length(len, e);
  if (e.reply_bytes > 4 && !skip_exact(fd, e.reply_bytes - 4))
    throw Error("the server closed the connection");
}

// Moves n bytes from one end of a socketpair to the other in the calling thread, in pieces that
// fit the socket's buffer (a whole 64 KiB request written at once could block a thread that is
// also its only reader).
void pass_through(int from, int to, const char* data, char* into, std::size_t n) {
  constexpr std::size_t kPiece = 32768;
  for (std::size_t off = 0; off < n; off += kPiece) {
    const std::size_t len = std::min(kPiece, n - off);
    write_exact(from, data + off, len);
    if (!read_exact(to, into + off, len)) throw Error("socketpair closed");
  }
}

// same-thread: the client and the server's loop take turns in one thread over a socketpair, the
// same bytes through the same socket calls but no wakeup of another task.
void exchange_in_thread(int client_fd, int server_fd, std::vector<char>& client_buf,
                        std::vector<char>& server_buf, const Exchange& e) {
  fill_request(client_buf, e);
  pass_through(client_fd, server_fd, client_buf.data(), server_buf.data(), e.request_bytes);
  const std::size_t reply = prepare_reply(server_buf.data(), e.request_bytes);
  pass_through(server_fd, client_fd, server_buf.data(), client_buf.data(), reply);
  std::uint32_t len;
  std::memcpy(&len, client_buf.data(), 4);
  check_reply_length(len, e);
}

// A client's part of the common start: it says it is ready on `ready`, then reads the window
// from `go` (one 16-byte record per client: atomic in a pipe).
struct StartLine {
  int ready, go;
};

std::string client_main(int id, int port, const Options& o, const tbench::Loadfile& loadfile, int cpu,
                        const StartLine& start) {
  setup_current_thread({"schedlab-tbcli", cpu, &o.policy, o.nice});
  const bool same_thread = o.placement == Placement::kSameThread;
  Fd conn, server_end;
  if (same_thread) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw SystemError("socketpair", errno);
    conn = Fd(sv[0]);
    server_end = Fd(sv[1]);
  } else {
    conn = connect_to_loopback(port);
    set_tcp_nodelay(conn.get());
  }
  std::vector<char> buf(kBufferBytes), server_buf(same_thread ? kBufferBytes : 0);
  auto run_one = [&](const Exchange& e) {
    if (same_thread)
      exchange_in_thread(conn.get(), server_end.get(), buf, server_buf, e);
    else
      exchange_over_tcp(conn.get(), buf, e);
  };
  run_one({8, 8, 0, 0});  // tbench's hello, outside the tally
  // Each client sizes its own exchanges (its name is in the paths) before the start: with
  // client.txt's 458k lines that takes a while, and no window must open before every client can run.
  const auto script = tbench::exchanges_for_client(loadfile, id);
  const char one = 1;
  if (::write(start.ready, &one, 1) != 1) throw SystemError("write (ready)", errno);
  Window w{};
  ssize_t n;
  do {
    n = ::read(start.go, &w, sizeof w);
  } while (n < 0 && errno == EINTR);
  if (n != sizeof w) throw Error("no start from the workload");
  ClientTally tally;
  tally.latencies_ns.reserve(1 << 16);
  for (std::int64_t now = monotonic_ns(); now < w.to_ns;) {
    for (const auto& e : script) {
      if (e.sleep_us) {
        ::usleep(e.sleep_us);
        continue;
      }
      const std::int64_t op_start = now;
      run_one(e);
      now = monotonic_ns();
      tally.count(e, op_start, now, w);
      if (now >= w.to_ns) break;
    }
  }
  // Closing is the end of the conversation: the server's thread for this client reads end of file.
  nlohmann::json summary = {{"client", id},
                            {"cpu", cpu},
                            {"ops_total", tally.ops_total},
                            {"ops", tally.ops},
                            {"bytes", tally.bytes}};
  return pack_report(summary, tally.latencies_ns);
}

}  // namespace

std::string TbenchWorkload::summary() const {
  return "dbench's tbench: N client processes replay a dbench loadfile as request/reply round trips to a "
         "server over TCP loopback";
}

std::string TbenchWorkload::experiment() const {
  return "How a 2005 resched/idle-loop optimisation was judged: one tbench client and its server on the same "
         "thread, the same CPU, or different CPUs, about 1% apart in MB/s.";
}

std::vector<ParamSpec> TbenchWorkload::params() const {
  std::vector<ParamSpec> p;
  p.push_back({"clients",
               ParamKind::kInteger,
               1,
               "",
               "client processes, each with its own server thread",
               1.0,
               256.0,
               {}});
  p.push_back(
      {"duration_s", ParamKind::kNumber, 10.0, "s", "measured time, after the warm-up", 0.05, 3600.0, {}});
  p.push_back({"warmup_s",
               ParamKind::kNumber,
               2.0,
               "s",
               "time the clients run before the measured window opens (tbench: a fifth of -t)",
               0.0,
               600.0,
               {}});
  p.push_back({"loadfile",
               ParamKind::kText,
               "",
               "",
               "a dbench 4 loadfile to replay (e.g. /usr/share/dbench/client.txt); empty: the bundled one",
               std::nullopt,
               std::nullopt,
               {}});
  p.push_back(
      {"port", ParamKind::kInteger, 0, "", "TCP port on 127.0.0.1 (0: any free port)", 0.0, 65535.0, {}});
  p.push_back(placement_param(
      "client i and its server thread: same-thread (one thread over a socketpair), same-cpu, smt-sibling, "
      "other-core, other-llc, unpinned, ..."));
  p.push_back(policy_param("the clients and server threads"));
  p.push_back(nice_param("the clients and server threads"));
  return p;
}

std::vector<MetricDesc> TbenchWorkload::metrics() const {
  const auto higher = Direction::kHigherIsBetter, lower = Direction::kLowerIsBetter;
  return {
      {"throughput_mb_s", "MB/s", higher, true,
       "file data moved (WriteX sizes + ReadX returned sizes) per second of the window, 10^6 bytes: tbench's "
       "Throughput line"},
      {"ops_s", "ops/s", higher, false,
       "operations (request/reply round trips) completed per second of the window"},
      {"latency_p50_us", "us", lower, false, "median time of one operation, request sent to reply read"},
      {"latency_p99_us", "us", lower, false, "99th percentile of an operation's time"},
      {"bytes_per_op", "bytes", higher, false, "file data per operation in the window (the loadfile's mix)"},
      {"operations", "count", higher, false,
       "operations over the clients' whole lives, warm-up included (counters per operation divide by it)"},
      {"context_switches", "count", lower, false,
       "voluntary + involuntary switches of the client and server processes over their lives (wait4)"},
      {"context_switches_per_op", "count", lower, false, "context_switches / operations"},
  };
}

std::map<std::string, std::map<std::string, std::string>> TbenchWorkload::quick_instances() const {
  return {{"tbench", {{"duration_s", "2"}, {"warmup_s", "0.5"}}}};
}

void TbenchWorkload::validate(const ParamValues& params, const WorkloadContext& ctx) const {
  const auto o = options_from(params);
  try {
    task_cpus(o, ctx);
  } catch (const InputError& e) {
    throw InputError(std::string("tbench.placement: ") + e.what());
  }
  load(o);
  check_port_free(o.port, "tbench.port");
}

std::vector<int> TbenchWorkload::cpus(const ParamValues& params, const WorkloadContext& ctx) const {
  return cpus_in_use(task_cpus(options_from(params), ctx), ctx.allowed_cpus);
}

WorkloadResult TbenchWorkload::run(const ParamValues& params, const WorkloadContext& ctx) {
  const auto o = options_from(params);
  const auto cpus = task_cpus(o, ctx);
  const auto loadfile = load(o);

  Fd listener;
  int port = 0;
  if (o.placement != Placement::kSameThread) {
    listener = listen_on_loopback(o.port, o.clients + 8, "tbench server");
    port = local_port(listener.get());
  }
  Pipe ready, go;
  const StartLine start{ready.write, go.read};
  ChildGroup group;
  if (o.placement != Placement::kSameThread)
    group.spawn("tbench server", [&] { return server_main(std::move(listener), o, cpus); });
  for (int i = 0; i < o.clients; ++i) {
    group.spawn("tbench client " + std::to_string(i), [&, i] {
      listener.reset();  // the server's, inherited
      return client_main(i, port, o, loadfile, cpus[static_cast<std::size_t>(2 * i)], start);
    });
  }
  listener.reset();
  ready.close_write();
  // Every client connected and ready, or one of them (or the server) gone, or the set-up limit.
  const std::int64_t setup_deadline = monotonic_ns() + static_cast<std::int64_t>(kSetupLimitS * 1e9);
  for (int readied = 0; readied < o.clients;) {
    group.throw_if_any_ended("before the start");
    if (monotonic_ns() > setup_deadline)
      throw Error("only " + std::to_string(readied) + " of " + std::to_string(o.clients) +
                  " clients ready after " + std::to_string(static_cast<int>(kSetupLimitS)) + " s");
    pollfd p{ready.read, POLLIN, 0};
    if (::poll(&p, 1, 100) < 0 && errno != EINTR) throw SystemError("poll", errno);
    char buf[256];
    const ssize_t n = (p.revents & POLLIN) ? ::read(ready.read, buf, sizeof buf) : 0;
    if (n > 0) readied += static_cast<int>(n);
  }
  const std::int64_t start_ns = monotonic_ns();
  const Window w{start_ns + static_cast<std::int64_t>(o.warmup_s * 1e9),
                 start_ns + static_cast<std::int64_t>((o.warmup_s + o.duration_s) * 1e9)};
  for (int i = 0; i < o.clients; ++i)
    if (::write(go.write, &w, sizeof w) != sizeof w) throw SystemError("write (go)", errno);
  listener.reset();
  const auto reports = group.wait_all(w.to_ns + static_cast<std::int64_t>(kGraceS * 1e9));

  LatencyHistogram latency;
  std::uint64_t ops = 0, ops_total = 0, bytes = 0;
  long switches = 0;
  nlohmann::json per_client = nlohmann::json::array();
  std::vector<std::int64_t> samples;
  for (const auto& r : reports) {
    switches += r.usage.ru_nvcsw + r.usage.ru_nivcsw;
    if (r.name == "tbench server") continue;
    nlohmann::json s;
    unpack_report(r.report, r.name, s, samples);
    for (auto ns : samples) latency.add(ns);
    ops += s.at("ops").get<std::uint64_t>();
    ops_total += s.at("ops_total").get<std::uint64_t>();
    bytes += s.at("bytes").get<std::uint64_t>();
    s["voluntary_switches"] = r.usage.ru_nvcsw;
    s["involuntary_switches"] = r.usage.ru_nivcsw;
    s["user_s"] = seconds(r.usage.ru_utime);
    s["system_s"] = seconds(r.usage.ru_stime);
    per_client.push_back(s);
  }
  if (ops == 0) throw Error("no operation completed inside the measured window");
  const double window_s = static_cast<double>(w.to_ns - w.from_ns) / 1e9;

  WorkloadResult result;
  auto& m = result.metrics;
  m["throughput_mb_s"] = {1e-6 * static_cast<double>(bytes) / window_s, "MB/s"};
  m["ops_s"] = {static_cast<double>(ops) / window_s, "ops/s"};
  m["latency_p50_us"] = {latency.percentile_us(0.50), "us"};
  m["latency_p99_us"] = {latency.percentile_us(0.99), "us"};
  m["bytes_per_op"] = {static_cast<double>(bytes) / static_cast<double>(ops), "bytes"};
  m["operations"] = {static_cast<double>(ops_total), "count"};
  m["context_switches"] = {static_cast<double>(switches), "count"};
  m["context_switches_per_op"] = {static_cast<double>(switches) / static_cast<double>(ops_total), "count"};
  auto& d = result.details;
  d["loadfile"] = {
      {"source", loadfile.source}, {"fnv1a64", loadfile.content_hash}, {"operations", loadfile.ops.size()}};
  d["clients"] = per_client;
  d["cpus"] = cpus;
  d["window_s"] = window_s;
  d["port"] = port;
  if (!reports.empty() && reports.front().name == "tbench server")
    d["server"] = {{"voluntary_switches", reports.front().usage.ru_nvcsw},
                   {"involuntary_switches", reports.front().usage.ru_nivcsw},
                   {"user_s", seconds(reports.front().usage.ru_utime)},
                   {"system_s", seconds(reports.front().usage.ru_stime)}};
  d["histogram"] = latency.to_json();
  return result;
}

}  // namespace schedlab
