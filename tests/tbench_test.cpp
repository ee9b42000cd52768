// tbench: the loadfile parser on dbench's real client.txt (Debian's dbench package) and on broken
// copies of it, then short runs through the schedlab binary — every placement this machine has,
// bad input, and a client killed in the middle of a run.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "core/error.hpp"
#include "core/sanitizers.hpp"
#include "socket_workloads.hpp"
#include "workloads/common/placement.hpp"
#include "workloads/common/task_setup.hpp"
#include "workloads/tbench/loadfile.hpp"

namespace schedlab {
namespace {

namespace fs = std::filesystem;
using tbench::OpKind;
using testing::expect_bad_input;
using testing::run_bundle;
using testing::TempDir;

const fs::path kClientTxt = "/usr/share/dbench/client.txt";

std::string parse_error(const std::string& text, const std::string& source = "broken.txt") {
  try {
    tbench::parse_loadfile(text, source);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(parsed)";
}

// The first `n` lines of client.txt, with line `bad` (1-based) replaced.
std::string client_txt_with(int n, int bad, const std::string& replacement) {
  std::ifstream in(kClientTxt);
  std::string out, line;
  for (int i = 1; i <= n && std::getline(in, line); ++i) out += (i == bad ? replacement : line) + "\n";
  return out;
}

TEST(TbenchLoadfile, ReadsDbenchsOwnClientTxt) {
  if (!fs::exists(kClientTxt))
    GTEST_SKIP() << kClientTxt << " is absent: install Debian's dbench (ci/setup does)";
  const auto load = tbench::read_loadfile(kClientTxt);
  // `awk '{print $1}' client.txt | sort | uniq -c` on dbench 4.0-2.1's file: 458,344 lines.
  ASSERT_EQ(load.ops.size(), 458344u);
  std::map<OpKind, std::size_t> kinds;
  std::uint64_t read_bytes = 0, written_bytes = 0;
  for (const auto& op : load.ops) {
    ++kinds[op.kind];
    if (op.kind == OpKind::kReadX) read_bytes += static_cast<std::uint64_t>(op.count);
    if (op.kind == OpKind::kWriteX) written_bytes += static_cast<std::uint64_t>(op.count);
  }
  EXPECT_EQ(kinds[OpKind::kReadX], 124199u);
  EXPECT_EQ(kinds[OpKind::kNTCreateX], 79230u);
  EXPECT_EQ(kinds[OpKind::kWriteX], 39502u);
  EXPECT_EQ(kinds[OpKind::kDeltree], 2u);
  EXPECT_EQ(kinds[OpKind::kLockX], 258u);
  // awk '$1=="ReadX"{r+=$5} $1=="WriteX"{w+=$4}': the file data tbench's MB/s counts.
  EXPECT_EQ(read_bytes, 1472088767u);
  EXPECT_EQ(written_bytes, 1015974170u);

  // Line 3: NTCreateX "\clients\client1" 0x1 0x2 16385 NT_STATUS_OK -> "./clients/client1".
  EXPECT_EQ(load.ops[2].line, 3);
  EXPECT_EQ(load.ops[2].path1, "./clients/client1");
  const auto client0 = tbench::exchanges_for_client(load, 0);
  EXPECT_EQ(client0.size(), 458344u - 2) << "Deltree is no exchange";
  // Line 3 is the second exchange (line 1 is the Deltree): 70+2+2*17+2 out, 39+48 back.
  EXPECT_EQ(client0[1].request_bytes, 108u);
  EXPECT_EQ(client0[1].reply_bytes, 87u);
  // Line 12: WriteX 9938 65534 1 1 NT_STATUS_OK -> 39+20+1 out, 39+16 back, 1 byte of data.
  EXPECT_EQ(load.ops[11].kind, OpKind::kWriteX);
  EXPECT_EQ(client0[10].request_bytes, 60u);
  EXPECT_EQ(client0[10].payload_bytes, 1u);
  // dbench names client 10's directory client10: one character more in each such name.
  const auto client10 = tbench::exchanges_for_client(load, 10);
  EXPECT_EQ(client10[1].request_bytes, client0[1].request_bytes + 2);
  const auto payload = std::accumulate(client0.begin(), client0.end(), std::uint64_t{0},
                                       [](std::uint64_t s, const auto& e) { return s + e.payload_bytes; });
  EXPECT_EQ(payload, read_bytes + written_bytes);
}

TEST(TbenchLoadfile, BrokenCopiesNameTheLine) {
  if (!fs::exists(kClientTxt))
    GTEST_SKIP() << kClientTxt << " is absent: install Debian's dbench (ci/setup does)";
  EXPECT_EQ(tbench::parse_loadfile(client_txt_with(60, 0, ""), "copy.txt").ops.size(), 60u);
  EXPECT_EQ(parse_error(client_txt_with(60, 40, "ReadY 9938 0 4096 4096 NT_STATUS_OK")),
            "broken.txt:40: unknown operation 'ReadY'");
  EXPECT_EQ(parse_error(client_txt_with(60, 17, "WriteX 9938 131072 65536k 65536 NT_STATUS_OK")),
            "broken.txt:17: WriteX: argument 3 is not a number: '65536k'");
  EXPECT_EQ(parse_error(client_txt_with(60, 9, "Close 9937")),
            "broken.txt:9: Close: the last field must be a status (NT_STATUS_... or 0x...), got '9937'");
  EXPECT_EQ(parse_error(client_txt_with(60, 12, "WriteX 9938 65534 NT_STATUS_OK")),
            "broken.txt:12: WriteX needs 4 arguments before its status, got 2");
  EXPECT_EQ(parse_error(client_txt_with(60, 5, "SMBopenX \\file 0x1 NT_STATUS_OK")),
            "broken.txt:5: 'SMBopenX' is a dbench 1 operation; this reads dbench 4 loadfiles");
  EXPECT_EQ(parse_error(client_txt_with(60, 2, "0.5 Close 9937 NT_STATUS_OK")),
            "broken.txt:2: a timestamped operation ('0.5'); timed loadfiles are not supported");
  EXPECT_EQ(parse_error(client_txt_with(60, 30, "ReadX 9938 0 4096 99999999 NT_STATUS_OK")),
            "broken.txt:30: ReadX: 99999999 is outside 0..1048576");
  EXPECT_EQ(parse_error("# only a comment\n\n"),
            "broken.txt: no operations (an empty loadfile, or only comments)");
}

TEST(TbenchLoadfile, TheBundledOneParsesWithClientTxtsKindOfMix) {
  const auto load = tbench::bundled_loadfile();
  EXPECT_EQ(load.source, "bundled");
  const auto ex = tbench::exchanges_for_client(load, 0);
  ASSERT_FALSE(ex.empty());
  const auto payload =
      std::accumulate(ex.begin(), ex.end(), 0.0, [](double s, const auto& e) { return s + e.payload_bytes; });
  // client.txt moves 5.4 kB of file data per operation; the bundled session is of that order.
  EXPECT_GT(payload / static_cast<double>(ex.size()), 2000);
  EXPECT_LT(payload / static_cast<double>(ex.size()), 10000);
}

// The placements this machine's topology and our affinity allow, besides same-thread.
std::vector<std::string> possible_placements() {
  const auto topo = read_topology(HostPaths::live());
  const auto allowed = current_affinity();
  std::vector<std::string> out{"same-thread"};
  for (const char* p : {"same-cpu", "smt-sibling", "other-core", "other-llc", "unpinned"}) {
    try {
      assign_cpus(parse_placement(p), 2, topo, allowed);
      out.push_back(p);
    } catch (const InputError& e) {
      std::cout << "placement " << p << " is not possible here: " << e.what() << "\n";
    }
  }
  return out;
}

TEST(Tbench, EveryPossiblePlacementRunsWithSaneMetrics) {
  const auto placements = possible_placements();
  std::string list;
  for (const auto& p : placements) list += (list.empty() ? "" : ",") + p;
  TempDir dir;
  const auto b = run_bundle(dir.path(),
                            "--workload tbench --repetitions 1 --param tbench.duration_s=0.3 "
                            "--param tbench.warmup_s=0.1 --param 'tbench.placement=[" +
                                list + "]'");
  ASSERT_EQ(b.instances.size(), placements.size());
  for (const auto& in : b.instances) {
    const std::string placement = in.params.at("placement");
    ASSERT_EQ(in.repetitions.size(), 1u);
    const auto& r = in.repetitions[0];
    ASSERT_TRUE(r.ok()) << placement << ": " << r.reason;
    auto m = [&](const char* name) { return r.metrics.at(name).value; };
    EXPECT_GT(m("ops_s"), 100) << placement;
    // throughput is file data per second: ops/s times data per op, in 10^6 bytes.
    EXPECT_NEAR(m("throughput_mb_s"), m("ops_s") * m("bytes_per_op") / 1e6, 1e-6 * m("throughput_mb_s"));
    EXPECT_GT(m("bytes_per_op"), 2000) << placement;
    EXPECT_LE(m("latency_p50_us"), m("latency_p99_us")) << placement;
    EXPECT_GE(m("operations"), m("ops_s") * 0.3 * 0.9) << placement << ": whole lives hold the window";
    const auto cpus = r.details.at("cpus").get<std::vector<int>>();
    ASSERT_EQ(cpus.size(), 2u);
    if (placement == "same-thread") {
      // One thread plays both ends: nothing to wake, so almost no switching.
      EXPECT_LT(m("context_switches_per_op"), 0.2) << placement;
    } else {
      // A round trip between two tasks blocks each once.
      EXPECT_GE(m("context_switches_per_op"), 1.5) << placement;
      EXPECT_LE(m("context_switches_per_op"), 4) << placement;
    }
    if (placement == "same-cpu") {
      EXPECT_EQ(cpus[0], cpus[1]);
    }
    if (placement == "other-core" || placement == "other-llc") {
      EXPECT_NE(cpus[0], cpus[1]);
    }
    if (placement == "unpinned") {
      EXPECT_EQ(cpus[0], -1);
    }
  }
  EXPECT_EQ(testing::threads_named("schedlab-tb"), std::vector<std::string>{});
}

TEST(Tbench, ClientTxtWithTwoClients) {
#if defined(SCHEDLAB_ASAN)
  // Parsing dbench's 458,344-operation client.txt takes 20 s of CI's budget under ASan; the parser runs
  // under ASan in TbenchLoadfile.ReadsDbenchsOwnClientTxt.
  GTEST_SKIP() << "the Release build runs it";
#endif
  if (!fs::exists(kClientTxt))
    GTEST_SKIP() << kClientTxt << " is absent: install Debian's dbench (ci/setup does)";
  TempDir dir;
  const auto b = run_bundle(dir.path(),
                            "--workload tbench --repetitions 1 --param tbench.duration_s=0.3 "
                            "--param tbench.warmup_s=0.1 --param tbench.clients=2 "
                            "--param tbench.loadfile=" +
                                kClientTxt.string());
  const auto& r = b.instances.at(0).repetitions.at(0);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.details.at("loadfile").at("source"), kClientTxt.string());
  EXPECT_EQ(r.details.at("loadfile").at("operations"), 458344);
  ASSERT_EQ(r.details.at("clients").size(), 2u);
  for (const auto& c : r.details.at("clients")) EXPECT_GT(c.at("ops").get<int>(), 0) << c.dump();
}

TEST(Tbench, BadInputIsExitTwo) {
  expect_bad_input("--workload tbench --param tbench.clients=0", "tbench.clients: must be between 1 and 256");
  expect_bad_input("--workload tbench --param tbench.loadfile=/nonexistent/client.txt",
                   "tbench.loadfile: cannot read '/nonexistent/client.txt': ENOENT");
  TempDir dir;
  testing::spit(dir.path() / "bad.txt",
                "NTCreateX \"\\a\" 0x1 0x2 1 NT_STATUS_OK\nReadX 1 0 x 4096 NT_STATUS_OK\n");
  expect_bad_input("--workload tbench --param tbench.loadfile=" + (dir.path() / "bad.txt").string(),
                   (dir.path() / "bad.txt").string() + ":2: ReadX: argument 3 is not a number: 'x'");
  expect_bad_input("--workload yield --param yield.placement=same-thread",
                   "same-thread applies to tbench only");

  // A port someone listens on.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  expect_bad_input("--workload tbench --param tbench.port=" + std::to_string(port),
                   "tbench.port: 127.0.0.1:" + std::to_string(port) + " cannot be used (EADDRINUSE");
  ::close(fd);
}

TEST(Tbench, AKilledClientFailsItsRepetitionAndTheOthersGoOn) {
  TempDir dir;
  auto r = testing::run_and_kill(dir.path(),
                                 "--workload tbench --repetitions 2 --param tbench.duration_s=0.6 "
                                 "--param tbench.warmup_s=0.1 --param tbench.clients=2",
                                 "schedlab-tbcli");
  ASSERT_TRUE(r.killed) << "no client process was seen\n" << r.outcome.out;
  EXPECT_EQ(r.outcome.code, 1) << r.outcome.out;
  const auto& in = r.bundle.instances.at(0);
  std::vector<Repetition> all{*in.warmup};
  all.insert(all.end(), in.repetitions.begin(), in.repetitions.end());
  ASSERT_EQ(all.size(), 3u);
  int failed = 0;
  for (const auto& rep : all) {
    if (rep.ok()) {
      EXPECT_GT(rep.metrics.at("ops_s").value, 0);
      continue;
    }
    ++failed;
    EXPECT_NE(rep.reason.find("tbench client"), std::string::npos) << rep.reason;
    EXPECT_NE(rep.reason.find("killed by signal 9 (SIGKILL)"), std::string::npos) << rep.reason;
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(testing::threads_named("schedlab-tb"), std::vector<std::string>{});
}

TEST(Tbench, WorkloadsListsItsParametersAndMetrics) {
  auto o = testing::schedlab("workloads");
  ASSERT_EQ(o.code, 0) << o.out;
  for (const std::string s :
       {"tbench 1.0.0", "tbench.clients", "tbench.placement", "tbench.duration_s", "tbench.loadfile",
        "tbench.port", "throughput_mb_s *", "ops_s", "latency_p99_us"})
    EXPECT_NE(o.out.find(s), std::string::npos) << s << "\n" << o.out;
}

}  // namespace
}  // namespace schedlab
