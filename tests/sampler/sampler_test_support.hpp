// Shared by the sampler tests: a store from rows, an observer that keeps the draws, and
// posterior summaries with their Monte Carlo error (batch means).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "agld/sample.hpp"
#include "agld/store.hpp"
#include "test_support.hpp"

namespace agld::test {

// Writes rows as a store (16-row chunks, zstd) with the metadata the sampler reads.
inline std::unique_ptr<Store> make_store(const std::string& path, const SparseRows& rows,
                                         uint64_t features, bool binary, size_t chunk_rows = 16) {
  StoreMeta meta;
  meta.features = features;
  meta.label_kind = binary ? LabelKind::kBinary : LabelKind::kReal;
  for (size_t r = 0; r < rows.rows(); ++r) {
    double sq = 0;
    for (float v : rows.row_values(r)) sq += double{v} * v;
    meta.row_sq_norm_sum += sq;
    meta.row_sq_norm_max = std::max(meta.row_sq_norm_max, sq);
  }
  ChunkCodec codec;
  EXPECT_TRUE(write_store(path, rows, chunk_rows, codec, meta).is_ok());
  std::unique_ptr<Store> store;
  Status st = Store::open(path, &store);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return store;
}

// Keeps every draw's tracked coordinates.
class KeepDraws final : public SampleObserver {
 public:
  Status on_draw(const DrawRecord& d) override {
    draws.push_back(d.tracked);
    lps.push_back(d.lp);
    return Status::ok();
  }
  Status on_eval(const EvalRecord& e) override {
    evals.push_back(e);
    return Status::ok();
  }
  std::vector<std::vector<double>> draws;
  std::vector<double> lps;
  std::vector<EvalRecord> evals;
};

struct Summary {
  double mean = 0, sd = 0, mcse = 0;  // mcse: Monte Carlo standard error of the mean
};

// Mean, sd and the batch-means Monte Carlo error of coordinate t of the draws.
inline Summary summarize(const std::vector<std::vector<double>>& draws, size_t t, size_t batches = 40) {
  Summary s;
  const size_t n = draws.size();
  if (n < 2 * batches) return s;
  double sum = 0, sq = 0;
  for (const auto& d : draws) sum += d[t];
  s.mean = sum / static_cast<double>(n);
  for (const auto& d : draws) sq += (d[t] - s.mean) * (d[t] - s.mean);
  s.sd = std::sqrt(sq / static_cast<double>(n - 1));
  const size_t per = n / batches;
  double bv = 0;
  for (size_t b = 0; b < batches; ++b) {
    double m = 0;
    for (size_t i = b * per; i < (b + 1) * per; ++i) m += draws[i][t];
    m /= static_cast<double>(per);
    bv += (m - s.mean) * (m - s.mean);
  }
  s.mcse = std::sqrt(bv / static_cast<double>(batches - 1) / static_cast<double>(batches));
  return s;
}

}  // namespace agld::test
