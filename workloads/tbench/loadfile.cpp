#include "workloads/tbench/loadfile.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <span>
#include <sstream>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace schedlab::tbench {
namespace {

// One row per operation: its arguments between the name and the status, which of them are
// file names and which are numbers, and where the number that sizes it (count) is.
struct OpSpec {
  std::string_view name;
  OpKind kind;
  int arguments;           // tokens between the name and the status
  std::vector<int> paths;  // argument positions (1-based) holding a file name
  int count_argument;      // position of LoadOp::count, 0 when none
};

const std::vector<OpSpec>& op_table() {
  static const std::vector<OpSpec> kOps = {
      {"NTCreateX", OpKind::kNTCreateX, 4, {1}, 0},
      {"Close", OpKind::kClose, 1, {}, 0},
      {"Rename", OpKind::kRename, 2, {1, 2}, 0},
      {"Unlink", OpKind::kUnlink, 2, {1}, 0},
      {"Deltree", OpKind::kDeltree, 1, {1}, 0},
      {"Rmdir", OpKind::kRmdir, 1, {1}, 0},
      {"Mkdir", OpKind::kMkdir, 1, {1}, 0},
      {"QUERY_PATH_INFORMATION", OpKind::kQueryPathInformation, 2, {1}, 0},
      {"QUERY_FILE_INFORMATION", OpKind::kQueryFileInformation, 2, {}, 0},
      {"QUERY_FS_INFORMATION", OpKind::kQueryFsInformation, 1, {}, 0},
      {"SET_FILE_INFORMATION", OpKind::kSetFileInformation, 2, {}, 0},
      {"FIND_FIRST", OpKind::kFindFirst, 4, {1}, 4},
      {"WriteX", OpKind::kWriteX, 4, {}, 3},
      {"LockX", OpKind::kLockX, 3, {}, 0},
      {"UnlockX", OpKind::kUnlockX, 3, {}, 0},
      {"ReadX", OpKind::kReadX, 4, {}, 4},
      {"Flush", OpKind::kFlush, 1, {}, 0},
      {"Sleep", OpKind::kSleep, 1, {}, 1},
  };
  return kOps;
}

// Space-separated tokens, as dbench reads a line: Windows separators become '/', a '/' right after
// a space is dropped (its " /" -> " " substitution, so unquoted names lose their leading
// separator), and double quotes group (and are dropped), as its next_token does. `out` keeps its
// strings' capacity from line to line: client.txt has 458k lines.
void tokens_of(std::string_view line, std::vector<std::string>& out, std::size_t& count) {
  count = 0;
  bool quoted = false, in_token = false;
  char previous = 0;
  auto current = [&]() -> std::string& {
    if (!in_token) {
      if (out.size() <= count) out.emplace_back();
      out[count].clear();
      in_token = true;
    }
    return out[count];
  };
  for (char c : line) {
    const char raw = c;
    if (c == '\\') c = '/';
    if (c == '/' && previous == ' ') {
      previous = raw;
      continue;
    }
    previous = raw;
    if (c == '"') {
      quoted = !quoted;
      current();
    } else if (c == ' ' && !quoted) {
      if (in_token) ++count;
      in_token = false;
    } else {
      current() += c;
    }
  }
  if (in_token) ++count;
}

// A number as dbench's strtol(s, NULL, 0) reads it (decimal, 0x hex, 0 octal), but the whole
// token must be one.
bool parse_number(const std::string& s, std::int64_t& v) {
  int base = 10;
  std::string_view digits = s;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    digits.remove_prefix(1);
  }
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  return ec == std::errc() && p == digits.data() + digits.size();
}

std::uint32_t path_length(const std::string& path, const std::string& client_name) {
  if (path.empty()) return 0;
  // dbench names client N's directory "client<N>" where the loadfile says "client1".
  constexpr std::string_view kClient1 = "client1";
  std::size_t length = path.size();
  for (std::size_t pos = 0; (pos = path.find(kClient1, pos)) != std::string::npos; pos += kClient1.size())
    length = length - kClient1.size() + client_name.size();
  return static_cast<std::uint32_t>(length);
}

}  // namespace

Loadfile parse_loadfile(std::string_view text, const std::string& source) {
  Loadfile load{source, hex64(fnv1a64(text)), {}};
  std::vector<std::string> tok_storage;
  std::size_t ntok = 0;
  int line_no = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    auto fail = [&](const std::string& what) {
      return InputError(source + ":" + std::to_string(line_no) + ": " + what);
    };
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    tokens_of(line, tok_storage, ntok);
    const std::span<const std::string> tok(tok_storage.data(), ntok);
    if (tok.size() < 2 || tok[0].empty() || tok[0][0] == '#')
      continue;  // blank lines and comments, as dbench
    if (tok[0].rfind("SMB", 0) == 0)
      throw fail("'" + tok[0] + "' is a dbench 1 operation; this reads dbench 4 loadfiles");
    if (tok[0][0] >= '0' && tok[0][0] <= '9')
      throw fail("a timestamped operation ('" + tok[0] + "'); timed loadfiles are not supported");
    const OpSpec* spec = nullptr;
    for (const auto& s : op_table())
      if (s.name == tok[0]) spec = &s;
    if (!spec) throw fail("unknown operation '" + tok[0] + "'");
    const std::string& status = tok.back();
    if (status.rfind("NT_STATUS_", 0) != 0 && status.rfind("0x", 0) != 0)
      throw fail(tok[0] + ": the last field must be a status (NT_STATUS_... or 0x...), got '" + status + "'");
    const int arguments = static_cast<int>(tok.size()) - 2;
    if (arguments < spec->arguments)
      throw fail(tok[0] + " needs " + std::to_string(spec->arguments) + " arguments before its status, got " +
                 std::to_string(arguments));
    LoadOp op{spec->kind, line_no, "", "", 0};
    for (int i = 1; i <= spec->arguments; ++i) {
      const bool is_path = std::find(spec->paths.begin(), spec->paths.end(), i) != spec->paths.end();
      const std::string& arg = tok[static_cast<std::size_t>(i)];
      if (is_path) {
        // dbench prefixes its working directory (".") to names that start with '/'.
        std::string& path = i == spec->paths.front() ? op.path1 : op.path2;
        path = arg.empty() || arg[0] != '/' ? "" : "." + arg;
        continue;
      }
      std::int64_t v = 0;
      if (!parse_number(arg, v))
        throw fail(tok[0] + ": argument " + std::to_string(i) + " is not a number: '" + arg + "'");
      if (i == spec->count_argument) {
        if (v < 0 || v > kMaxMessageBytes)
          throw fail(tok[0] + ": " + std::to_string(v) + " is outside 0.." +
                     std::to_string(kMaxMessageBytes));
        op.count = v;
      }
    }
    load.ops.push_back(std::move(op));
  }
  if (load.ops.empty()) throw InputError(source + ": no operations (an empty loadfile, or only comments)");
  return load;
}

Loadfile read_loadfile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("tbench.loadfile: cannot read '" + path.string() + "': " + errno_text(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_loadfile(text.str(), path.string());
}

std::vector<Exchange> exchanges_for_client(const Loadfile& load, int client_id) {
  std::vector<Exchange> out;
  out.reserve(load.ops.size());
  // The sizes of tbench's sockio backend (dbench 4.0): a 39-byte SMB header plus the fields
  // each request and reply carries; names travel as UTF-16 (two bytes a character).
  constexpr std::uint32_t kHeader = 39;
  const std::string client_name = "client" + std::to_string(client_id);
  for (const auto& op : load.ops) {
    const std::uint32_t n1 = path_length(op.path1, client_name), n2 = path_length(op.path2, client_name);
    const auto count = static_cast<std::uint32_t>(op.count);
    Exchange e;
    switch (op.kind) {
      case OpKind::kNTCreateX:
        e = {70 + 2 + 2 * n1 + 2, kHeader + 12 * 4, 0, 0};
        break;
      case OpKind::kClose:
        e = {kHeader + 8, kHeader, 0, 0};
        break;
      case OpKind::kRename:
        e = {kHeader + 8 + 2 * n1 + 2 * n2, kHeader, 0, 0};
        break;
      case OpKind::kUnlink:
      case OpKind::kRmdir:
      case OpKind::kMkdir:
        e = {kHeader + 2 + 2 * n1 + 2, kHeader, 0, 0};
        break;
      case OpKind::kDeltree:
        continue;  // tbench sends nothing for it
      case OpKind::kQueryPathInformation:
        e = {kHeader + 16 + 2 * n1, kHeader + 32, 0, 0};
        break;
      case OpKind::kQueryFileInformation:
      case OpKind::kQueryFsInformation:
        e = {kHeader + 20, kHeader + 32, 0, 0};
        break;
      case OpKind::kSetFileInformation:
        e = {kHeader + 32, kHeader + 8, 0, 0};
        break;
      case OpKind::kFindFirst:
        e = {kHeader + 20 + 2 * n1, kHeader + 90 * count, 0, 0};
        break;
      case OpKind::kWriteX:
        e = {kHeader + 20 + count, kHeader + 16, count, 0};
        break;
      case OpKind::kLockX:
      case OpKind::kUnlockX:
        e = {kHeader + 12, kHeader, 0, 0};
        break;
      case OpKind::kReadX:
        e = {kHeader + 20, kHeader + 20 + count, count, 0};
        break;
      case OpKind::kFlush:
        e = {kHeader + 2, kHeader, 0, 0};
        break;
      case OpKind::kSleep:
        e = {0, 0, 0, count};
        break;
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace schedlab::tbench
