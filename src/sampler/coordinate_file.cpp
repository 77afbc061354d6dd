#include "sampler/coordinate_file.hpp"

#include <cmath>

#include <fmt/format.h>

namespace agld::sampler {
namespace {
constexpr uint64_t kReleaseEvery = uint64_t{8} << 20;  // rows between letting pages go
}  // namespace

Status CoordinateFile::open(const std::string& option, const std::string& path, uint64_t dim, uint64_t min_cols,
                            std::unique_ptr<CoordinateFile>* out, FileSystem& fs) {
  auto f = std::make_unique<CoordinateFile>();
  f->option_ = option;
  f->path_ = path;
  Status st = fs.open_readable(path, &f->file_);
  if (!st.is_ok()) return st.with_context(option);
  ByteSpan bytes;
  st = f->file_->view(0, static_cast<size_t>(f->file_->size()), &bytes);
  if (st.is_ok()) st = decode_npy_f64(bytes, &f->view_);
  if (!st.is_ok()) return st.with_context(option + " " + path);
  if (f->view_.rows != dim || f->view_.cols < min_cols) {
    return Status::invalid_argument(fmt::format(
        "{} {}: shape ({}, {}), expected ({}, {}) or more columns, a row for each of the run's {} coordinates (as "
        "posterior.npy)", option, path, f->view_.rows, f->view_.cols, dim, min_cols, dim));
  }
  f->header_ = static_cast<uint64_t>(f->view_.data.data() - bytes.data());
  *out = std::move(f);
  return Status::ok();
}

Status CoordinateFile::check_column(uint64_t col, bool positive) const {
  for (uint64_t j = 0; j < view_.rows; ++j) {
    const double v = at(j, col);
    if (!std::isfinite(v) || (positive && !(v > 0))) {
      AGLD_RETURN_IF_ERROR(file_->check_unchanged());  // a file cut short under its mapping reads zeros
      return Status::invalid_argument(fmt::format("{} {}: row {} (coordinate {}) has {} in column {}, expected a{} "
                                                  "finite number", option_, path_, j, j + 1, v, col,
                                                  positive ? " positive" : ""));
    }
    if ((j + 1) % kReleaseEvery == 0) release(j + 1);
  }
  release(view_.rows);
  return file_->check_unchanged();
}

void CoordinateFile::release(uint64_t rows) const {
  file_->drop_cache(header_, static_cast<size_t>(8 * rows * view_.cols));
}

}  // namespace agld::sampler
