#pragma once
// dbench's loadfile format (version 4, the `client.txt` Debian's dbench package installs): one SMB
// operation per line, e.g.
//     NTCreateX "\clients\client1\filler.000" 0x40 0x2 9938 NT_STATUS_OK
//     ReadX 9938 0 4096 4096 NT_STATUS_OK
// and what tbench turns each operation into: one request of a given size sent to the server and
// one reply of a given size read back, the sizes of tbench's sockio backend. The MB/s figure
// counts only the file data moved (WriteX's size, ReadX's returned size), as tbench's does.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace schedlab::tbench {

enum class OpKind {
  kNTCreateX,
  kClose,
  kRename,
  kUnlink,
  kDeltree,
  kRmdir,
  kMkdir,
  kQueryPathInformation,
  kQueryFileInformation,
  kQueryFsInformation,
  kSetFileInformation,
  kFindFirst,
  kWriteX,
  kLockX,
  kUnlockX,
  kReadX,
  kFlush,
  kSleep
};

struct LoadOp {
  OpKind kind;
  int line = 0;            // in the loadfile, for errors
  std::string path1;       // a file name argument as dbench sees it ("./clients/client1/..."), else ""
  std::string path2;       // Rename's second name
  std::int64_t count = 0;  // WriteX: size; ReadX: returned size; FIND_FIRST: entries; Sleep: us
};

struct Loadfile {
  std::string source;        // the file's path, or "bundled"
  std::string content_hash;  // FNV-1a 64 of the text, for the bundle's provenance
  std::vector<LoadOp> ops;
};

// One operation on the wire for one client: tbench's request and reply sizes (each with its
// 4-byte length header), the file data it stands for, or a pause.
struct Exchange {
  std::uint32_t request_bytes = 0;  // 0: nothing is sent (Deltree, Sleep)
  std::uint32_t reply_bytes = 0;
  std::uint32_t payload_bytes = 0;  // counted in throughput_mb_s
  std::uint32_t sleep_us = 0;
};

// The largest request or reply accepted (tbench's server refuses more than 70,000 bytes).
constexpr std::int64_t kMaxMessageBytes = 1 << 20;

// Throws InputError "SOURCE:LINE: what is wrong" for a malformed line, an unknown operation, a
// dbench 1 or timed loadfile, or a file without operations.
Loadfile parse_loadfile(std::string_view text, const std::string& source);
// Reads and parses a file; InputError naming it when it cannot be read.
Loadfile read_loadfile(const std::filesystem::path& path);
// The loadfile compiled into schedlab (used when tbench.loadfile is empty).
Loadfile bundled_loadfile();

// What client `client_id` (0-based; dbench renames "client1" in paths to "client<id>") sends and
// receives for each operation. Deltree is no exchange in tbench and is left out.
std::vector<Exchange> exchanges_for_client(const Loadfile& load, int client_id);

}  // namespace schedlab::tbench
