#include "table.hpp"

#include <algorithm>

namespace attnrt::cli {

std::string Table::render() const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (size_t r = 0; r < rows_.size(); ++r) {
    std::string line;
    for (size_t c = 0; c < rows_[r].size(); ++c) {
      line += rows_[r][c];
      if (c + 1 < rows_[r].size()) line += std::string(width[c] - rows_[r][c].size() + 2, ' ');
    }
    out += line + "\n";
    if (r == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 2;
      out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
    }
  }
  return out;
}

}  // namespace attnrt::cli
