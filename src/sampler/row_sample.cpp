#include "sampler/row_sample.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "agld/reader.hpp"
#include "common/mix.hpp"

namespace agld::sampler {

std::vector<uint32_t> RowSample::locals(std::span<const uint32_t> js) const {
  std::vector<uint32_t> out;
  out.reserve(js.size());
  for (uint32_t j : js) out.push_back(static_cast<uint32_t>(std::lower_bound(cols.begin(), cols.end(), j) - cols.begin()));
  return out;
}

std::vector<int32_t> RowSample::positions(const std::vector<uint32_t>& locals) const {
  std::vector<int32_t> at(cols.size(), -1);
  for (size_t i = 0; i < locals.size(); ++i) at[locals[i]] = static_cast<int32_t>(i);
  return at;
}

Status read_row_sample(const Store& train, const ResolvedSample& r, const std::vector<float>& m,
                       std::span<const uint32_t> extra_cols, RowSample* out, uint64_t* rows_read) {
  const StoreMeta& meta = train.meta();
  const uint64_t want = std::min<uint64_t>(kSampleRows, meta.rows);
  // Rows in a seeded random order: the first whole chunks are a sample. Rows kept in their
  // source order (time-ordered, sorted): a chunk holds one stretch of them, so every stride-th
  // row of up to kSpreadChunks chunks, which spreads the sample over the store.
  uint64_t stride = 1;
  if (!rows_shuffled(meta) && train.chunk_count() > 1) {
    const uint64_t chunks = std::min<uint64_t>(train.chunk_count(), kSpreadChunks);
    const uint64_t rows_in = meta.rows / train.chunk_count() * chunks;
    stride = std::max<uint64_t>(1, (rows_in + want - 1) / want);
  }
  ReaderOptions o;
  o.order = "br";  // whole chunks in a random order
  o.seed = mix64(r.given.seed ^ 0x9e3779b9u);
  o.batch_size = static_cast<size_t>(std::min<uint64_t>(want, 4096));
  o.memory = std::max(reader_min_memory(train, o), std::min<uint64_t>(r.given.memory / 4, uint64_t{256} << 20));
  std::unique_ptr<Reader> reader;
  Status st = Reader::open(train, o, &reader);
  if (!st.is_ok()) return st;
  std::vector<uint32_t> idx;
  std::vector<double> val;
  std::vector<uint64_t> offsets{0};
  std::vector<double> labels;
  const bool intercept = r.given.intercept;
  const uint32_t icpt = static_cast<uint32_t>(r.dim - 1);
  uint64_t got = 0, seen = 0;
  while (got < want && idx.size() < kSampleNnz && seen < meta.rows) {
    Batch b;
    st = reader->next(&b);
    if (!st.is_ok()) return st;
    for (size_t i = 0; i < b.size() && got < want && seen < meta.rows; ++i) {
      if (seen++ % stride != 0) continue;
      ++got;
      const auto ri = b.row_indices(i);
      const auto rv = b.row_values(i);
      for (size_t e = 0; e < ri.size(); ++e) {
        idx.push_back(ri[e]);
        val.push_back(std::sqrt(static_cast<double>(m[ri[e]])) * rv[e]);
      }
      if (intercept) {
        idx.push_back(icpt);
        val.push_back(std::sqrt(static_cast<double>(m[icpt])));
      }
      offsets.push_back(idx.size());
      labels.push_back(b.labels[i]);
    }
  }
  *rows_read = seen;
  out->cols = idx;
  out->cols.insert(out->cols.end(), extra_cols.begin(), extra_cols.end());
  std::sort(out->cols.begin(), out->cols.end());
  out->cols.erase(std::unique(out->cols.begin(), out->cols.end()), out->cols.end());
  out->local.resize(idx.size());
  for (size_t e = 0; e < idx.size(); ++e) {
    out->local[e] = static_cast<uint32_t>(std::lower_bound(out->cols.begin(), out->cols.end(), idx[e]) - out->cols.begin());
  }
  out->values = std::move(val);
  out->offsets = std::move(offsets);
  out->labels = std::move(labels);
  return Status::ok();
}

}  // namespace agld::sampler
