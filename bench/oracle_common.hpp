// What bench/linear_oracle.cpp and bench/sparse_oracle.cpp share: every row of a store read
// once (the intercept's constant feature appended), and a run's .npy files read back.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agld/reader.hpp"
#include "agld/run_output.hpp"
#include "agld/store.hpp"

namespace oracle {

// Calls row(indices, values, label) for every row of the store once, in stored order; with
// `intercept`, index `features` and value 1 end every row.
template <typename Row>
agld::Status for_each_row(const agld::Store& store, bool intercept, Row&& row) {
  agld::ReaderOptions o;
  o.order = "ca";
  o.batch_size = 4096;
  o.memory = uint64_t{1} << 30;
  std::unique_ptr<agld::Reader> reader;
  agld::Status st = agld::Reader::open(store, o, &reader);
  if (!st.is_ok()) return st;
  const uint64_t rows = store.meta().rows;
  const uint32_t intercept_index = static_cast<uint32_t>(store.meta().features);
  std::vector<uint32_t> idx;
  std::vector<double> val;
  for (uint64_t seen = 0; seen < rows;) {
    agld::Batch b;
    st = reader->next(&b);
    if (!st.is_ok()) return st;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(b.size(), rows - seen));
    for (size_t i = 0; i < take; ++i) {
      idx.assign(b.row_indices(i).begin(), b.row_indices(i).end());
      val.assign(b.row_values(i).begin(), b.row_values(i).end());
      if (intercept) {
        idx.push_back(intercept_index);
        val.push_back(1.0);
      }
      row(std::span<const uint32_t>(idx), std::span<const double>(val), b.labels[i]);
    }
    seen += take;
  }
  return agld::Status::ok();
}

// A float64 .npy of shape (rows, cols), read and checked as agld summary reads it.
inline bool read_npy(const std::string& path, size_t* rows, size_t* cols, std::vector<double>* data) {
  std::unique_ptr<agld::ReadableFile> f;
  agld::ByteSpan bytes;
  agld::NpyView v;
  if (!agld::FileSystem::local().open_readable(path, &f).is_ok() || !f->view(0, f->size(), &bytes).is_ok() ||
      !agld::decode_npy_f64(bytes, &v).is_ok()) {
    return false;
  }
  *rows = v.rows;
  *cols = v.cols;
  data->resize(v.rows * v.cols);
  std::memcpy(data->data(), v.data.data(), data->size() * sizeof(double));
  return true;
}

}  // namespace oracle
