// Plain-text tables for the CLI: columns padded to their widest cell.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace attnrt::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const;
  void print(std::FILE* out = stdout) const { std::fputs(render().c_str(), out); }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace attnrt::cli
