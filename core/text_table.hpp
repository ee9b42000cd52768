#pragma once
// A table for text and markdown (the diff, the run summary): columns as wide as their content, an indent, and
// a width the text must keep to (80 columns for mail, 100 for a terminal). Where the content is wider,
// columns marked optional are left out (the table says which) and names marked elidable lose their middle.
#include <string>
#include <vector>

namespace schedlab {

struct Column {
  std::string title;
  bool right = false;         // numbers: right-aligned
  bool optional = false;      // left out, last first, when the table is too wide
  bool elidable = false;      // a name that may lose its middle ("micro.ben~other-core")
  std::size_t min_width = 8;  // an elidable column keeps at least this much
};

class Table {
 public:
  explicit Table(std::vector<Column> columns, std::size_t indent = 0)
      : columns_(std::move(columns)), indent_(indent) {}
  void add(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }

  // Plain text no wider than `width` (0: no limit), header first; optional columns left out are named in
  // a last line. Where even names cut to their minimum do not fit, the last column's cell goes under its
  // row when it does not fit beside it.
  std::string text(std::size_t width) const;
  // A GitHub-flavoured markdown table (no width: markdown wraps), `|` in cells escaped.
  std::string markdown() const;

 private:
  std::vector<Column> columns_;
  std::size_t indent_;
  std::vector<std::vector<std::string>> rows_;
};

// Characters on screen: UTF-8 continuation bytes take no column.
std::size_t display_width(const std::string& text);

// `text` cut to `width` columns by dropping its middle: "micro.benchmarks=futex:other-core" in 20
// columns is "micro.benc~ther-core".
std::string elide(const std::string& text, std::size_t width);

// Words of `text` in lines of at most `width` columns, each line after the first indented by `indent`;
// a word wider than that (a path) is never cut: its line runs past the width.
std::string wrap(const std::string& text, std::size_t width, std::size_t indent);

}  // namespace schedlab
