#pragma once
// Runs inside a qemu guest beside the suite (`schedlab kernel guest-collect FROM TO`, started by the
// guest's /init): copies each file the run finishes in FROM (the guest's tmpfs) to TO (the host's
// output share) as soon as it is complete, so a kernel that dies in a later trial keeps the earlier
// trials' bundles. The run itself cannot write to the share: its atomic, no-replace rename
// (renameat2 RENAME_NOREPLACE) is refused by 9p.
#include <filesystem>
#include <iosfwd>

namespace schedlab::kernels {

// Marker printed on the console for each file copied: "SCHEDLAB-COPIED NAME BYTES".
inline constexpr const char* kMarkCopied = "SCHEDLAB-COPIED";

// Watches `from` (inotify: a file renamed into it, or closed after writing) and copies each finished
// file whose name does not start with "." (those are temporary files) to `to`, under a temporary name
// renamed into place, so the host never sees half a file. Returns on SIGTERM or SIGINT, after one more
// pass over everything in `from`. Blocks in poll() in between: it costs the measured run nothing. The
// return value is the number of files that could not be copied (each also reported on `console`).
int collect_guest_files(const std::filesystem::path& from, const std::filesystem::path& to,
                        std::ostream& console);

}  // namespace schedlab::kernels
