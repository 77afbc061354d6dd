// Per-feature statistics of a store (agld/feature_stats.hpp): read from its record, blocks
// checked one at a time, or computed in one pass over its chunks when it has none.
#include "agld/feature_stats.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "store/crc32c.hpp"
#include "store/feature_accumulator.hpp"
#include "store/feature_stats_format.hpp"

namespace agld {
namespace {

// Hands the statistics to the visitor in blocks of exactly max_block features (the last may
// have fewer), whatever the sizes they come in.
class Blocks {
 public:
  Blocks(uint64_t max_block, uint64_t features,
         const std::function<Status(const FeatureStatsBlock&)>& visit)
      : visit_(visit), size_(std::min(max_block, features)) {
    count_.resize(size_);
    sum_sq_.resize(size_);
    max_sq_.resize(size_);
  }

  // The next n features' statistics.
  Status push(const uint64_t* count, const double* sum_sq, const float* max_abs, uint64_t n) {
    while (n > 0) {
      const uint64_t take = std::min(n, size_ - used_);
      for (uint64_t i = 0; i < take; ++i) {
        count_[used_ + i] = count[i];
        sum_sq_[used_ + i] = sum_sq[i];
        const double a = max_abs[i];
        max_sq_[used_ + i] = a * a;  // exact: a float's square fits a double's mantissa
      }
      used_ += take;
      count += take, sum_sq += take, max_abs += take, n -= take;
      if (used_ == size_) AGLD_RETURN_IF_ERROR(flush());
    }
    return Status::ok();
  }

  Status flush() {
    if (used_ == 0) return Status::ok();
    FeatureStatsBlock b;
    b.first = first_;
    b.count = {count_.data(), used_};
    b.sum_sq = {sum_sq_.data(), used_};
    b.max_sq = {max_sq_.data(), used_};
    first_ += used_;
    used_ = 0;
    return visit_(b);
  }

 private:
  const std::function<Status(const FeatureStatsBlock&)>& visit_;
  uint64_t size_;
  uint64_t first_ = 0, used_ = 0;
  std::vector<uint64_t> count_;
  std::vector<double> sum_sq_, max_sq_;
};

// The record, block by block: the table and each block checked against their CRCs, each
// block's numbers against each other and the store's shape.
Status scan_stored(const Store& store, const FeatureStatsSection& sec, Blocks* out) {
  const ReadableFile& f = store.file();
  auto corrupt = [&](const std::string& why) {
    return Status::corruption(store.path() + ": feature statistics: " + why);
  };
  ByteSpan table;
  const uint64_t table_bytes = uint64_t{sec.block_count} * format::kStatsEntrySize;
  Status st = f.view(sec.table_offset, table_bytes, &table);
  if (!st.is_ok()) return corrupt("block table: " + st.message());
  if (crc32c::value(table.data(), table.size()) != sec.table_crc)
    return corrupt("block table: checksum mismatch");
  const uint64_t d = sec.features, per = sec.block_features;
  const uint64_t block_max = std::min<uint64_t>(per, d);
  std::vector<uint64_t> count(block_max);
  std::vector<double> sum_sq(block_max);
  std::vector<float> max_abs(block_max);
  std::vector<std::byte> raw, scratch;
  ReadBuffer buf;
  const StoreMeta& m = store.meta();
  uint64_t expect = sec.offset, nnz = 0;
  for (uint64_t b = 0; b < sec.block_count; ++b) {
    const format::StatsEntry e =
        format::decode_stats_entry(table.data() + b * format::kStatsEntrySize);
    const uint64_t first = b * per, n = std::min(per, d - first);
    const std::string name = "block " + std::to_string(b) + " (features " + std::to_string(first) +
                             ".." + std::to_string(first + n - 1) + ", file offset " +
                             std::to_string(e.offset) + ")";
    if (e.offset != expect || e.stored_size > sec.table_offset - e.offset ||
        (b + 1 == sec.block_count && e.offset + e.stored_size != sec.table_offset)) {
      return corrupt("block table: " + name + " is not where the blocks before it end (" +
                     std::to_string(expect) + ") or runs past the table");
    }
    expect += e.stored_size;
    ByteSpan stored;
    st = f.read_uncached(e.offset, e.stored_size, &buf, &stored);
    if (!st.is_ok()) return st.with_context(store.path() + ": feature statistics: " + name);
    if (crc32c::value(stored.data(), stored.size()) != e.crc)
      return corrupt(name + ": checksum mismatch");
    std::string why = format::unpack_stats_block(stored, sec.codec, n, &raw);
    if (why.empty()) {
      why = format::decode_stats_block(raw.data(), raw.size(), n, &scratch, count.data(),
                                       sum_sq.data(), max_abs.data());
    }
    if (!why.empty()) return corrupt(name + ": " + why);
    for (uint64_t i = 0; i < n; ++i) {
      const double a = max_abs[i];
      // A sum of squares holds the largest square; a feature in no row has no square.
      const bool sound = count[i] <= m.rows && std::isfinite(sum_sq[i]) && std::isfinite(a) &&
                         a >= 0 && a * a <= sum_sq[i] && (count[i] > 0 || sum_sq[i] == 0);
      if (!sound) {
        return corrupt(name + ": feature " + std::to_string(first + i) + " has count " +
                       std::to_string(count[i]) + ", sum of squares " + std::to_string(sum_sq[i]) +
                       " and largest |x| " + std::to_string(a) + " (" + std::to_string(m.rows) +
                       " rows)");
      }
      nnz += count[i];
    }
    AGLD_RETURN_IF_ERROR(out->push(count.data(), sum_sq.data(), max_abs.data(), n));
  }
  if (nnz != m.nnz) {
    return corrupt("the features' counts add up to " + std::to_string(nnz) + ", the store has " +
                   std::to_string(m.nnz) + " nonzeros");
  }
  return out->flush();
}

// One sequential pass over the chunks, each read once past the page cache and decoded, the
// same additions in the same order as `agld convert` makes them (FeatureAccumulator).
Status scan_computed(const Store& store, Blocks* out) {
  const uint64_t d = store.meta().features;
  FeatureAccumulator acc;
  try {
    acc.reserve(d);
  } catch (const std::bad_alloc&) {
    return Status::io_error(store.path() + ": no memory for the statistics of " +
                            std::to_string(d) + " features");
  }
  ReadBuffer buf;
  DecodedChunk chunk;
  for (size_t k = 0; k < store.chunk_count(); ++k) {
    const ChunkInfo& c = store.chunk(k);
    ByteSpan stored;
    AGLD_RETURN_IF_ERROR(store.file().read_uncached(c.offset, c.stored_size, &buf, &stored));
    AGLD_RETURN_IF_ERROR(store.decode_chunk(k, stored, &chunk, Store::Labels::kRaw));
    acc.add(chunk.indices().data(), chunk.has_values() ? chunk.values().data() : nullptr,
            chunk.nnz());
  }
  const uint64_t per = kFeatureStatsBlockFeatures;
  std::vector<uint64_t> count(std::min(per, d));
  std::vector<double> sum_sq(count.size());
  std::vector<float> max_abs(count.size());
  for (uint64_t first = 0; first < d; first += per) {
    const uint64_t n = std::min(per, d - first);
    acc.fill(first, n, count.data(), sum_sq.data(), max_abs.data());
    AGLD_RETURN_IF_ERROR(out->push(count.data(), sum_sq.data(), max_abs.data(), n));
  }
  return out->flush();
}

}  // namespace

bool has_feature_stats(const Store& store) { return store.feature_stats_section().has_value(); }

Status scan_feature_stats(const Store& store,
                          const std::function<Status(const FeatureStatsBlock&)>& visit,
                          FeatureStatsSource* source, uint64_t max_block) {
  if (max_block == 0) {
    return Status::invalid_argument(store.path() + ": feature statistics in blocks of 0 features");
  }
  Blocks out(max_block, store.meta().features, visit);
  const auto& sec = store.feature_stats_section();
  if (source) *source = sec ? FeatureStatsSource::kStored : FeatureStatsSource::kComputed;
  return sec ? scan_stored(store, *sec, &out) : scan_computed(store, &out);
}

}  // namespace agld
