#include "reader/row_reader.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "store/format.hpp"

namespace agld::reader {
namespace {

// Set bits of bitmap in [a, b).
uint64_t count_bits(const std::vector<uint64_t>& bitmap, uint64_t a, uint64_t b) {
  if (a >= b) return 0;
  uint64_t n = 0;
  const uint64_t wa = a / 64, wb = (b - 1) / 64;
  for (uint64_t w = wa; w <= wb; ++w) {
    uint64_t word = bitmap[w];
    if (w == wa) word &= ~uint64_t{0} << (a % 64);
    if (w == wb && b % 64 != 0) word &= ~uint64_t{0} >> (64 - b % 64);
    n += static_cast<uint64_t>(std::popcount(word));
  }
  return n;
}

// Bytes of the value bitmap of a chunk of nnz entries.
uint64_t bitmap_bytes(uint64_t nnz) { return (nnz + 7) / 8; }

}  // namespace

RowReader::RowReader(const Store& store)
    : store_(store), file_(store.file()), page_(static_cast<uint64_t>(::sysconf(_SC_PAGESIZE))) {}

bool RowReader::possible(const Store& store) {
  for (size_t k = 0; k < store.chunk_count(); ++k) {
    if (store.chunk(k).codec != Codec::kNone) return false;
  }
  return store.chunk_count() > 0;
}

uint64_t RowReader::max_index_read_bytes(const Store& store) {
  uint64_t most = 0;
  for (size_t k = 0; k < store.chunk_count(); ++k) {
    const ChunkInfo& c = store.chunk(k);
    uint64_t b = 4 * uint64_t{c.row_count} + 2 * 4096;
    if (c.flags & kChunkSparseValues) b += bitmap_bytes(c.nnz) + 2 * 4096;
    most = std::max(most, b);
  }
  return most;
}

uint64_t RowReader::max_index_bytes(const Store& store) {
  uint64_t most = 0;
  for (size_t k = 0; k < store.chunk_count(); ++k) {
    const ChunkInfo& c = store.chunk(k);
    uint64_t b = 4 * (uint64_t{c.row_count} + 1) + sizeof(RowIndex);
    if (c.flags & kChunkSparseValues) {
      b += 8 * ((uint64_t{c.nnz} + 63) / 64) + 4 * (c.row_count / RowIndex::kMarkRows + 1);
    }
    most = std::max(most, b);
  }
  return most;
}

Status RowReader::corrupt(size_t k, const std::string& why) const {
  const ChunkInfo& c = store_.chunk(k);
  return Status::corruption(store_.path() + ": chunk " + std::to_string(k) + " (rows " +
                            std::to_string(c.first_row) + ".." +
                            std::to_string(c.first_row + c.row_count - 1) + ", file offset " +
                            std::to_string(c.offset) + "): " + why + " (read a row at a time)");
}

uint64_t RowReader::pages(uint64_t offset, uint64_t n) const {
  if (n == 0) return 0;
  return ((offset + n + page_ - 1) / page_ - offset / page_) * page_;
}

void RowReader::drop(uint64_t offset, uint64_t n) const {
  if (n == 0) return;
  const uint64_t begin = offset / page_ * page_;
  // Whole pages: a drop of part of a page leaves it in the page cache.
  file_.drop_cache(begin, (offset + n + page_ - 1) / page_ * page_ - begin);
}

RowReader::IndexParts RowReader::index_parts(size_t k) const {
  const ChunkInfo& c = store_.chunk(k);
  const bool sparse = (c.flags & kChunkSparseValues) != 0;
  return {c.offset + 8 * uint64_t{c.row_count}, 4 * uint64_t{c.row_count},
          c.offset + format::raw_prefix_size(c.row_count, c.nnz), sparse ? bitmap_bytes(c.nnz) : 0};
}

uint64_t RowReader::ask_index(size_t k) const {
  const IndexParts p = index_parts(k);
  file_.will_need(p.lengths_at, p.lengths_bytes);
  if (p.bitmap_bytes) file_.will_need(p.bitmap_at, p.bitmap_bytes);
  return pages(p.lengths_at, p.lengths_bytes) + pages(p.bitmap_at, p.bitmap_bytes);
}

uint64_t RowReader::ask_bytes_of_index(size_t k) const {
  const IndexParts p = index_parts(k);
  return pages(p.lengths_at, p.lengths_bytes) + pages(p.bitmap_at, p.bitmap_bytes);
}

void RowReader::drop_index(size_t k) const {
  const IndexParts p = index_parts(k);
  drop(p.lengths_at, p.lengths_bytes);
  drop(p.bitmap_at, p.bitmap_bytes);
}

Status RowReader::read_index(size_t k, RowIndex* out, uint64_t* bytes_read) const {
  const ChunkInfo& c = store_.chunk(k);
  const uint64_t rows = c.row_count, nnz = c.nnz;
  const bool sparse = (c.flags & kChunkSparseValues) != 0;
  const uint64_t lengths_at = c.offset + 8 * rows;
  const uint64_t bitmap_at = c.offset + format::raw_prefix_size(rows, nnz);
  ask_index(k);  // both regions at once: one wait for the disk rather than two

  ByteSpan lengths;
  Status st = file_.view(lengths_at, 4 * rows, &lengths);
  if (st.is_ok()) {
    out->offsets.resize(rows + 1);
    out->offsets[0] = 0;
    uint64_t total = 0;
    for (uint64_t r = 0; r < rows && st.is_ok(); ++r) {
      total += format::get<uint32_t>(lengths.data() + 4 * r);
      if (total > nnz) st = corrupt(k, "row lengths exceed the chunk's nonzeros");
      out->offsets[r + 1] = static_cast<uint32_t>(total);
    }
    if (st.is_ok() && total != nnz) {
      st = corrupt(k, "row lengths do not add up to the chunk's nonzeros");
    }
  }
  *bytes_read += pages(lengths_at, 4 * rows);
  drop(lengths_at, 4 * rows);
  if (!sparse || !st.is_ok()) {
    if (sparse) drop(bitmap_at, bitmap_bytes(nnz));
    out->bitmap.clear();
    out->marks.clear();
    return st;
  }

  ByteSpan bits;
  st = file_.view(bitmap_at, bitmap_bytes(nnz), &bits);
  if (st.is_ok()) {
    out->bitmap.assign((nnz + 63) / 64, 0);
    std::memcpy(out->bitmap.data(), bits.data(), bits.size());
    if (nnz % 64 != 0) out->bitmap.back() &= ~uint64_t{0} >> (64 - nnz % 64);  // bits past nnz
    out->marks.resize(rows / RowIndex::kMarkRows + 1);
    uint64_t before = 0;
    for (uint64_t j = 0; j < out->marks.size(); ++j) {
      out->marks[j] = static_cast<uint32_t>(before);
      const uint64_t r0 = j * RowIndex::kMarkRows;
      const uint64_t r1 = std::min(rows, r0 + RowIndex::kMarkRows);
      if (r0 < r1) before += count_bits(out->bitmap, out->offsets[r0], out->offsets[r1]);
    }
    // raw_size was checked against the shape when the store was opened: it leaves room for
    // the bitmap and a whole number of values.
    const uint64_t stored =
        (c.raw_size - format::raw_prefix_size(rows, nnz) - bitmap_bytes(nnz)) / 4;
    if (before != stored) {
      st = corrupt(k, "value bitmap names " + std::to_string(before) + " values, " +
                          std::to_string(stored) + " are stored");
    }
  }
  *bytes_read += pages(bitmap_at, bitmap_bytes(nnz));
  drop(bitmap_at, bitmap_bytes(nnz));
  return st;
}

void RowReader::locate(size_t k, uint32_t r, const RowIndex& index, RowSpan* out) const {
  const ChunkInfo& c = store_.chunk(k);
  const uint64_t rows = c.row_count, nnz = c.nnz;
  const uint32_t start = index.offsets[r];
  out->nnz = index.offsets[r + 1] - start;
  out->label_at = c.offset + 8 * uint64_t{r};
  out->indices_at = c.offset + 12 * rows + 4 * uint64_t{start};
  out->where.clear();
  const uint64_t values_at = c.offset + format::raw_prefix_size(rows, nnz);
  if (!(c.flags & kChunkValues)) {
    out->values = RowSpan::Values::kNone;
    out->values_at = 0;
    out->stored = 0;
  } else if (!(c.flags & kChunkSparseValues)) {
    out->values = RowSpan::Values::kDense;
    out->values_at = values_at + 4 * uint64_t{start};
    out->stored = out->nnz;
  } else {
    out->values = RowSpan::Values::kSparse;
    const uint32_t block = r / RowIndex::kMarkRows;
    const uint64_t before =
        index.marks[block] +
        count_bits(index.bitmap, index.offsets[uint64_t{block} * RowIndex::kMarkRows], start);
    for (uint32_t p = 0; p < out->nnz; ++p) {
      const uint64_t bit = uint64_t{start} + p;
      if (index.bitmap[bit / 64] >> (bit % 64) & 1) out->where.push_back(p);
    }
    out->stored = static_cast<uint32_t>(out->where.size());
    out->values_at = values_at + bitmap_bytes(nnz) + 4 * before;
  }
}

uint64_t RowReader::ask(const RowSpan& span) const {
  file_.will_need(span.label_at, 8);
  uint64_t b = pages(span.label_at, 8);
  if (span.nnz > 0) {
    file_.will_need(span.indices_at, 4 * uint64_t{span.nnz});
    b += pages(span.indices_at, 4 * uint64_t{span.nnz});
  }
  if (span.stored > 0) {
    file_.will_need(span.values_at, 4 * uint64_t{span.stored});
    b += pages(span.values_at, 4 * uint64_t{span.stored});
  }
  return b;
}

Status RowReader::read(size_t k, uint32_t r, const RowSpan& span, DirectRows* out,
                       uint64_t* bytes_read) const {
  const ChunkInfo& c = store_.chunk(k);
  const StoreMeta& meta = store_.meta();
  const uint64_t row = c.first_row + r;
  const size_t old_nnz = out->indices.size();
  const uint64_t n = span.nnz;
  // The pages are not needed again, whatever is found in them.
  auto drop_pages = [&] {
    *bytes_read += pages(span.label_at, 8) + pages(span.indices_at, 4 * n) +
                   pages(span.values_at, 4 * uint64_t{span.stored});
    drop(span.label_at, 8);
    drop(span.indices_at, 4 * n);
    drop(span.values_at, 4 * uint64_t{span.stored});
  };
  auto fail = [&](Status st) {
    drop_pages();
    out->indices.resize(old_nnz);
    out->values.resize(old_nnz);
    return st;
  };
  ByteSpan bytes;

  // Label.
  Status st = file_.view(span.label_at, 8, &bytes);
  if (!st.is_ok()) return fail(st);
  double label = format::get<double>(bytes.data());
  if (!std::isfinite(label))
    return fail(corrupt(k, "non-finite label in row " + std::to_string(row)));
  if (meta.label_kind == LabelKind::kBinary) label = label == meta.label_positive ? 1.0 : -1.0;

  // Indices, checked as Store::read_chunk checks them.
  st = file_.view(span.indices_at, 4 * n, &bytes);
  if (!st.is_ok()) return fail(st);
  out->indices.resize(old_nnz + n);
  uint32_t* idx = out->indices.data() + old_nnz;
  if (n > 0) std::memcpy(idx, bytes.data(), 4 * n);
  const bool delta = (c.flags & kChunkDelta) != 0;
  for (uint64_t p = 0; p < n; ++p) {
    uint64_t cur = idx[p];
    if (p > 0) {
      const uint64_t prev = idx[p - 1];
      if (delta) cur = idx[p] == 0 ? prev : prev + idx[p];
      if (cur <= prev) {
        return fail(corrupt(k, "feature indices not increasing in row " + std::to_string(row)));
      }
    }
    if (cur >= meta.features) {
      return fail(corrupt(k, "feature index out of range in row " + std::to_string(row)));
    }
    idx[p] = static_cast<uint32_t>(cur);
  }

  // Values.
  out->values.resize(old_nnz + n, 1.0f);
  float* val = out->values.data() + old_nnz;
  if (span.stored > 0) {
    st = file_.view(span.values_at, 4 * uint64_t{span.stored}, &bytes);
    if (!st.is_ok()) return fail(st);
    for (uint32_t j = 0; j < span.stored; ++j) {
      const float v = format::get<float>(bytes.data() + 4 * uint64_t{j});
      if (!std::isfinite(v))
        return fail(corrupt(k, "non-finite value in row " + std::to_string(row)));
      val[span.values == RowSpan::Values::kSparse ? span.where[j] : j] = v;
    }
  }

  drop_pages();
  out->ids.push_back(row);
  out->labels.push_back(label);
  out->offsets.push_back(static_cast<uint32_t>(out->indices.size()));
  return Status::ok();
}

}  // namespace agld::reader
