#include "core/text_table.hpp"

#include <algorithm>
#include <numeric>

namespace schedlab {
namespace {

// Byte offset of the `column`-th display column (UTF-8 aware).
std::size_t byte_at_column(const std::string& text, std::size_t column) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (seen == column) return i;
    ++seen;
  }
  return text.size();
}

std::string pad(const std::string& text, std::size_t width, bool right) {
  const auto w = display_width(text);
  if (w >= width) return text;
  return right ? std::string(width - w, ' ') + text : text + std::string(width - w, ' ');
}

}  // namespace

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033' && i + 1 < text.size() && text[i + 1] == '[') {  // a colour: no column
      while (i < text.size() && text[i] != 'm') ++i;
      continue;
    }
    width += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
  }
  return width;
}

std::string elide(const std::string& text, std::size_t width) {
  const auto w = display_width(text);
  if (w <= width) return text;
  if (width < 3) return text.substr(0, byte_at_column(text, width));
  const std::size_t head = (width - 1) / 2, tail = width - 1 - head;
  return text.substr(0, byte_at_column(text, head)) + "~" + text.substr(byte_at_column(text, w - tail));
}

std::string wrap(const std::string& text, std::size_t width, std::size_t indent) {
  if (width == 0) return text;
  const std::string continuation(indent < width ? indent : 0, ' ');
  std::vector<std::string> lines;
  std::string line;
  bool fresh = false;  // a continuation line with no word yet: the spaces before a word are dropped
  auto next_line = [&] {
    lines.push_back(line);
    line = continuation;
    fresh = true;
  };
  for (std::size_t at = 0; at < text.size();) {
    // The spaces before a word are kept where the line goes on (aligned prefixes), dropped at a break.
    const auto word_at = std::min(text.find_first_not_of(' ', at), text.size());
    const auto end = std::min(text.find(' ', word_at), text.size());
    const auto spaces = text.substr(at, word_at - at);
    const auto word = text.substr(word_at, end - word_at);
    at = end;
    if (word.empty()) break;
    // A word wider than a line breaks after its commas (a list such as a kernel's sched features); one
    // without commas (a path) stays whole, past the width: a path cut in two with an indent between
    // cannot be copied, and a terminal wraps the long line where it must.
    const bool list =
        display_width(continuation) + display_width(word) > width && word.find(',') != std::string::npos;
    std::vector<std::string> pieces;
    for (std::size_t from = 0; from < word.size();) {
      const auto comma = list ? word.find(',', from) : std::string::npos;
      const auto to = comma == std::string::npos ? word.size() : comma + 1;
      pieces.push_back(word.substr(from, to - from));
      from = to;
    }
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const auto before = i == 0 ? spaces.size() : 0;
      if (!fresh && display_width(line) > display_width(continuation) &&
          display_width(line) + before + display_width(pieces[i]) > width)
        next_line();
      if (!fresh && i == 0) line += spaces;
      line += pieces[i];
      fresh = false;
    }
  }
  lines.push_back(line);
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

void Table::add(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::text(std::size_t width) const {
  std::vector<std::size_t> widths(columns_.size());
  std::vector<bool> shown(columns_.size(), true);
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = display_width(columns_[c].title);
    for (const auto& r : rows_) widths[c] = std::max(widths[c], display_width(r[c]));
  }
  std::size_t gap = 2;  // one space where two do not fit
  auto total = [&] {
    std::size_t sum = indent_, n = 0;
    for (std::size_t c = 0; c < columns_.size(); ++c)
      if (shown[c]) sum += widths[c], ++n;
    return sum + (n > 0 ? (n - 1) * gap : 0);
  };
  std::vector<std::string> left_out;
  for (std::size_t c = columns_.size(); width > 0 && total() > width && c-- > 0;) {
    if (!columns_[c].optional) continue;
    shown[c] = false;
    left_out.push_back(columns_[c].title);
  }
  if (width > 0 && total() > width) gap = 1;
  // Names lose their middle a column at a time, the widest first, so that no one name is cut to nothing
  // while another keeps its length.
  while (width > 0 && total() > width) {
    std::size_t widest = columns_.size();
    for (std::size_t c = 0; c < columns_.size(); ++c)
      if (shown[c] && columns_[c].elidable && widths[c] > columns_[c].min_width &&
          (widest == columns_.size() || widths[c] > widths[widest]))
        widest = c;
    if (widest == columns_.size()) break;
    --widths[widest];
  }
  std::size_t last = 0;
  for (std::size_t c = 0; c < columns_.size(); ++c)
    if (shown[c]) last = c;
  // Still too wide: the last column (a verdict, free text) goes under its row where it does not fit.
  const bool overflow = width > 0 && total() > width && !columns_[last].right;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out(indent_, ' ');
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (!shown[c]) continue;
      auto cell = c == last && overflow ? cells[c] : elide(cells[c], widths[c]);
      if (c == last && overflow) {
        while (!out.empty() && out.back() == ' ') out.pop_back();
        out += display_width(out) + gap + display_width(cell) <= width
                   ? std::string(gap, ' ') + cell
                   : "\n" + wrap(std::string(indent_ + 4, ' ') + cell, width, indent_ + 4);
        break;
      }
      out += c == last && !columns_[c].right ? cell : pad(cell, widths[c], columns_[c].right);
      if (c != last) out += std::string(gap, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> titles;
  for (const auto& col : columns_) titles.push_back(col.title);
  std::string out = line(titles);
  for (const auto& r : rows_) out += line(r);
  if (!left_out.empty()) {
    std::string names;
    for (auto it = left_out.rbegin(); it != left_out.rend(); ++it) names += (names.empty() ? "" : ", ") + *it;
    out += std::string(indent_, ' ') + "(left out at " + std::to_string(width) + " columns: " + names +
           "; --format json has them)\n";
  }
  return out;
}

std::string Table::markdown() const {
  auto cell = [](const std::string& text) {
    std::string out;
    for (char ch : text) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return out;
  };
  std::string out = "|";
  for (const auto& c : columns_) out += " " + cell(c.title) + " |";
  out += "\n|";
  for (const auto& c : columns_) out += c.right ? " ---: |" : " --- |";
  out += "\n";
  for (const auto& r : rows_) {
    out += "|";
    for (const auto& text : r) out += " " + cell(text) + " |";
    out += "\n";
  }
  return out;
}

}  // namespace schedlab
