// The default loadfile: a short office-client session written for schedlab in dbench 4's
// format (not a copy of dbench's client.txt), with about client.txt's mix of operations —
// reads and creates first, then path queries, closes and writes — and about its file data per
// operation (client.txt: 5.4 kB; this file: 4.9 kB). Give tbench.loadfile=/usr/share/dbench/client.txt
// to replay dbench's own trace.
#include "workloads/tbench/loadfile.hpp"

namespace schedlab::tbench {
namespace {

constexpr std::string_view kBundled = R"(# schedlab's bundled tbench loadfile (dbench 4 format)
Mkdir "\clients\client1" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 1001 NT_STATUS_OK
Close 1001 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\report.doc" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
FIND_FIRST "\clients\client1\*.doc" 260 1366 0 NT_STATUS_NO_SUCH_FILE
NTCreateX "\clients\client1\report.doc" 0x44 0x2 1002 NT_STATUS_OK
QUERY_FS_INFORMATION 1 NT_STATUS_OK
WriteX 1002 0 65536 65536 NT_STATUS_OK
WriteX 1002 65536 65536 65536 NT_STATUS_OK
WriteX 1002 131072 16384 16384 NT_STATUS_OK
QUERY_FILE_INFORMATION 1002 258 NT_STATUS_OK
Flush 1002 NT_STATUS_OK
Close 1002 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\report.doc" 1004 NT_STATUS_OK
NTCreateX "\clients\client1\report.doc" 0x40 0x1 1003 NT_STATUS_OK
ReadX 1003 0 4096 4096 NT_STATUS_OK
ReadX 1003 4096 4096 4096 NT_STATUS_OK
ReadX 1003 8192 61440 61440 NT_STATUS_OK
ReadX 1003 69632 4096 4096 NT_STATUS_OK
QUERY_FILE_INFORMATION 1003 1005 NT_STATUS_OK
Close 1003 NT_STATUS_OK
FIND_FIRST "\clients\client1\*.*" 260 1366 11 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\notes.txt" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
NTCreateX "\clients\client1\notes.txt" 0x44 0x2 1004 NT_STATUS_OK
WriteX 1004 0 2048 2048 NT_STATUS_OK
SET_FILE_INFORMATION 1004 1004 NT_STATUS_OK
Close 1004 NT_STATUS_OK
NTCreateX "\clients\client1\notes.txt" 0x40 0x1 1005 NT_STATUS_OK
LockX 1005 0 1 NT_STATUS_OK
ReadX 1005 0 2048 2048 NT_STATUS_OK
UnlockX 1005 0 1 NT_STATUS_OK
Close 1005 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\report.bak" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
Rename "\clients\client1\report.doc" "\clients\client1\report.bak" NT_STATUS_OK
NTCreateX "\clients\client1\report.bak" 0x40 0x1 1006 NT_STATUS_OK
ReadX 1006 0 4096 4096 NT_STATUS_OK
ReadX 1006 4096 8192 8192 NT_STATUS_OK
ReadX 1006 12288 4096 4096 NT_STATUS_OK
Close 1006 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\notes.txt" 1004 NT_STATUS_OK
NTCreateX "\clients\client1\notes.txt" 0x40 0x1 1007 NT_STATUS_OK
ReadX 1007 0 2048 2048 NT_STATUS_OK
ReadX 1007 2048 512 0 NT_STATUS_OK
Close 1007 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\report.bak" 1004 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\notes.txt" 1004 NT_STATUS_OK
Unlink "\clients\client1\report.bak" 0x6 NT_STATUS_OK
Unlink "\clients\client1\notes.txt" 0x6 NT_STATUS_OK
FIND_FIRST "\clients\client1\*.*" 260 1366 2 NT_STATUS_OK
Rmdir "\clients\client1" NT_STATUS_OK
)";

}  // namespace

Loadfile bundled_loadfile() {
  return parse_loadfile(kBundled, "bundled");
}

}  // namespace schedlab::tbench
