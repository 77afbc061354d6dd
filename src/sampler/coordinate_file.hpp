// A float64 .npy with one row per coordinate, in posterior.npy's layout (column 0 a value,
// column 1 a standard deviation), as --metric and --init read it: viewed in place, checked
// before use, its pages let go as they are read so that d = 54.7M costs no copy. Internal to
// the sampler layer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "agld/file.hpp"
#include "agld/run_output.hpp"
#include "agld/status.hpp"

namespace agld::sampler {

class CoordinateFile {
 public:
  // Opens path for `option` (named in every error), through fs: d rows and at least
  // min_cols columns.
  static Status open(const std::string& option, const std::string& path, uint64_t dim, uint64_t min_cols,
                     std::unique_ptr<CoordinateFile>* out, FileSystem& fs = FileSystem::local());
  uint64_t cols() const { return view_.cols; }
  double at(uint64_t j, uint64_t col) const { return view_.at(j, col); }
  // Every value of column col is finite (and positive, if asked); the error names the row.
  Status check_column(uint64_t col, bool positive) const;
  // Rows [0, rows) are read: the page cache may drop them.
  void release(uint64_t rows) const;

 private:
  std::string option_, path_;
  std::unique_ptr<ReadableFile> file_;
  NpyView view_;
  uint64_t header_ = 0;
};

}  // namespace agld::sampler
