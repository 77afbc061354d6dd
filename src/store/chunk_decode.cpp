// Reading chunks (docs/format.md): a chunk's stored bytes checked by their CRC, decompressed,
// its sections located (packed planes unpacked, value and label tables looked up), and decoded
// into a DecodedChunk, checked on the way: a fast pass whose checks carry no branch on the
// data, and for a chunk that fails them a slow one that names the fault.
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "agld/store.hpp"
#include "store/crc32c.hpp"
#include "store/format.hpp"
#include "store/kernels.hpp"
#include "store/zstd_ctx.hpp"

namespace agld {
namespace {

using store_detail::ZstdDCtx;

std::string chunk_name(size_t k, const ChunkInfo& c) {
  return "chunk " + std::to_string(k) + " (rows " + std::to_string(c.first_row) + ".." +
         std::to_string(c.first_row + c.row_count - 1) + ", file offset " +
         std::to_string(c.offset) + ")";
}


// A chunk's raw layout (docs/format.md), read-only: the stored bytes themselves (codec none)
// or the decompressed frame. Nothing in it need be aligned.
struct RawChunk {
  const std::byte* labels;
  const std::byte* row_nnz;
  const std::byte* idx;            // the index column as stored, unless shuffled
  format::Planes4 planes;          // shuffled: the index column's byte planes, unpacked
  bool shuffled;
  const std::byte* values;         // dense values, or nullptr (none, or sparse: below)
  const uint8_t* bitmap;           // sparse values: a bit per nonzero, set where stored
  const std::byte* stored_values;  // sparse values: the values not equal to 1
  uint64_t stored_count;
  // Looked up in a table whose entries were checked finite (VALUE_DICT, PACKED_ROWS).
  bool labels_finite, values_finite;
};

// Where a chunk is decoded to: DecodedChunk's arrays.
struct Decoded {
  double* labels;
  uint32_t* idx;    // delta-coded until made absolute, while kChunkDelta is set
  float* values;    // nullptr: every value is 1
  uint32_t* offsets;
};

uint32_t load_u32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Index p of the raw column (transposed or not).
uint32_t raw_index(const RawChunk& raw, uint64_t p) {
  return raw.shuffled ? format::unshuffled4(raw.planes, p) : load_u32(raw.idx + 4 * p);
}

// The index column as stored (un-transposed), into out.idx.
void copy_indices(const ChunkInfo& c, const RawChunk& raw, const Decoded& out) {
  if (raw.shuffled) {
    format::byte_unshuffle4(raw.planes, reinterpret_cast<std::byte*>(out.idx), c.nnz);
  } else if (c.nnz > 0) {
    std::memcpy(out.idx, raw.idx, 4 * uint64_t{c.nnz});
  }
}

// Finishes a sound chunk quickly: the labels, indices and values into out (delta-coded
// indices made absolute, sparse values expanded), and the row offsets, checking everything
// explain_chunk checks. Its loops carry no branch on the data: the checks accumulate into
// flags, and a chunk that fails any of them is decoded again by explain_chunk, which names
// the fault. Returns whether it is sound.
bool finish_fast(const ChunkInfo& c, uint64_t d, const RawChunk& raw, const Decoded& out) {
  const uint32_t rows = c.row_count;
  uint32_t* offsets = out.offsets;
  uint64_t total = 0;
  offsets[0] = 0;
  for (uint32_t r = 0; r < rows; ++r) {
    total += load_u32(raw.row_nnz + 4 * uint64_t{r});
    offsets[r + 1] = static_cast<uint32_t>(total);
  }
  // Partial sums only grow, so none exceeded nnz (< 2^32) if the last did not.
  if (total != c.nnz) return false;

  bool bad = false;
  uint32_t* idx = out.idx;
  if (c.flags & kChunkDelta) {
    copy_indices(c, raw, out);
    // Deltas of at least 1 make every row increasing; then its last index is its largest.
    for (uint32_t r = 0; r < rows; ++r) {
      const uint32_t b = offsets[r], e = offsets[r + 1];
      if (b == e) continue;
      uint64_t cur = idx[b];
      bool zero = false;
      for (uint32_t p = b + 1; p < e; ++p) {
        zero |= idx[p] == 0;
        cur += idx[p];
        idx[p] = static_cast<uint32_t>(cur);
      }
      bad |= zero | (cur >= d);
    }
  } else if (c.nnz > 0) {
    // Every row is increasing iff the only places where the whole array does not increase
    // are row starts: count both (the first as the indices are written, the second a step
    // a row).
    format::Falls f;
    if (raw.shuffled) {
      f = format::unshuffle4_count_falls(raw.planes, idx, c.nnz);
    } else {
      copy_indices(c, raw, out);
      f = format::count_falls(idx, c.nnz);
    }
    // From the raw column, which is in cache: the decoded one was written past it.
    uint64_t falls_at_starts = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      const uint32_t b = offsets[r];
      falls_at_starts += (b > 0) & (b < offsets[r + 1]) &&
                         raw_index(raw, b) <= raw_index(raw, b - 1);
    }
    bad |= (f.falls != falls_at_starts) | (f.top >= d);
  }

  std::memcpy(out.labels, raw.labels, 8 * uint64_t{rows});
  bool nonfinite = !raw.labels_finite && format::any_nonfinite_doubles(raw.labels, rows);
  if (raw.values) {
    std::memcpy(out.values, raw.values, 4 * uint64_t{c.nnz});
    nonfinite |= !raw.values_finite && format::any_nonfinite_floats(raw.values, c.nnz);
  } else if (raw.bitmap) {
    nonfinite |= !raw.values_finite && format::any_nonfinite_floats(raw.stored_values, raw.stored_count);
    const uint64_t named =
        format::expand_values(raw.bitmap, raw.stored_values, raw.stored_count, c.nnz, out.values);
    if (named != raw.stored_count) return false;
  }
  return !(bad | nonfinite);
}

// The checks of finish_fast one at a time, each failure with its message. Also a complete
// decoder: a chunk it passes comes out exactly as finish_fast would leave it.
Status explain_chunk(const std::string& path, size_t k, const ChunkInfo& c, uint64_t d,
                     const RawChunk& raw, const Decoded& out) {
  auto corrupt = [&](const std::string& why) {
    return Status::corruption(path + ": " + chunk_name(k, c) + ": " + why);
  };
  const uint32_t rows = c.row_count;
  if (raw.bitmap) {
    const uint64_t named =
        format::expand_values(raw.bitmap, raw.stored_values, raw.stored_count, c.nnz, out.values);
    if (named > raw.stored_count) return corrupt("value bitmap names more values than are stored");
    if (named < raw.stored_count) return corrupt("value bitmap names fewer values than are stored");
  } else if (raw.values) {
    std::memcpy(out.values, raw.values, 4 * uint64_t{c.nnz});
  }
  uint32_t* offsets = out.offsets;
  uint64_t total = 0;
  offsets[0] = 0;
  for (uint32_t r = 0; r < rows; ++r) {
    total += load_u32(raw.row_nnz + 4 * uint64_t{r});
    if (total > c.nnz) return corrupt("row lengths exceed the chunk's nonzeros");
    offsets[r + 1] = static_cast<uint32_t>(total);
  }
  if (total != c.nnz) return corrupt("row lengths do not add up to the chunk's nonzeros");
  copy_indices(c, raw, out);  // again: the fast pass may have changed them
  const bool delta = (c.flags & kChunkDelta) != 0;
  uint32_t* idx = out.idx;
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t b = offsets[r], e = offsets[r + 1];
    if (b == e) continue;
    uint64_t prev = idx[b];
    if (prev >= d) return corrupt("feature index out of range in row " + std::to_string(c.first_row + r));
    for (uint32_t p = b + 1; p < e; ++p) {
      uint64_t cur;
      if (delta) {
        cur = prev + idx[p];
        if (idx[p] == 0) cur = prev;  // caught below as not increasing
      } else {
        cur = idx[p];
      }
      if (cur <= prev || cur >= d) {
        return corrupt("feature indices not increasing or out of range in row " +
                       std::to_string(c.first_row + r));
      }
      idx[p] = static_cast<uint32_t>(cur);
      prev = cur;
    }
  }
  std::memcpy(out.labels, raw.labels, 8 * uint64_t{rows});
  for (uint32_t r = 0; r < rows; ++r) {
    if (!std::isfinite(out.labels[r])) return corrupt("non-finite label");
  }
  if (out.values) {
    for (uint32_t p = 0; p < c.nnz; ++p) {
      if (!std::isfinite(out.values[p])) return corrupt("non-finite value");
    }
  }
  return Status::ok();
}


// Where DecodedChunk's arrays start in its words: each on a 32-byte boundary (4 words), so
// that the decoder's vector stores are aligned (the allocation itself is).
struct DecodedLayout {
  uint64_t idx_word, values_word, words;
};
DecodedLayout decoded_layout(const ChunkInfo& c) {
  auto up4 = [](uint64_t w) { return (w + 3) / 4 * 4; };
  const bool values = (c.flags & (kChunkValues | kChunkSparseValues)) != 0;
  DecodedLayout l;
  l.idx_word = up4(c.row_count);
  l.values_word = up4(l.idx_word + (uint64_t{c.nnz} + 1) / 2);
  l.words = values ? l.values_word + (uint64_t{c.nnz} + 1) / 2 : l.idx_word + (uint64_t{c.nnz} + 1) / 2;
  return l;
}

// Plane b of a packed column of n elements as n bytes: where it is stored (8 bits), else
// unpacked into this thread's buffer `slot` (0 bits: a plane of zeros), which holds it
// until the slot is used again.
const std::byte* unpacked_plane(const format::PackedColumn& col, unsigned b, uint64_t n,
                                size_t slot) {
  thread_local std::vector<std::byte> zeros;
  thread_local std::array<std::vector<std::byte>, 6> buffers;
  const unsigned w = col.width[b];
  if (w == 8) return col.plane[b];
  if (w == 0) {
    if (zeros.size() < n) zeros.resize(n);  // new elements are zero; none is ever written
    return zeros.data();
  }
  std::vector<std::byte>& buf = buffers.at(slot);
  buf.resize(n);
  format::unpack_plane(col.plane[b], n, w, buf.data());
  return buf.data();
}

// The rows section of a PACKED_ROWS chunk at `at`: the label table's size, the table, the
// labels' codes and the row lengths (packed columns). Looks the labels up and un-transposes
// the lengths into this thread's buffers, which rc then points at, as if they had been
// stored; moves `at` past the section. Returns what is wrong with it, or nothing.
std::string unpack_rows(const ChunkInfo& c, const std::byte* end, const std::byte** at,
                        RawChunk* rc) {
  const uint64_t rows = c.row_count;
  const std::byte* p = *at;
  const uint64_t rest = end - p;
  const uint64_t size = rest >= 4 ? load_u32(p) : 0;
  if (size == 0 || size > rows || 4 + 8 * size > rest) {
    return "label table of " + std::to_string(size) + " entries does not fit the chunk";
  }
  format::PackedColumn codes, lengths;
  const std::byte* codes_at = p + 4 + 8 * size;
  std::string why = format::parse_packed_column(codes_at, end - codes_at, 2, rows, &codes);
  if (!why.empty()) return "label codes: " + why;
  const std::byte* lengths_at = codes_at + codes.size;
  why = format::parse_packed_column(lengths_at, end - lengths_at, 4, rows, &lengths);
  if (!why.empty()) return "row lengths: " + why;
  thread_local std::vector<double> table, labels;
  thread_local std::vector<uint32_t> row_nnz;
  table.resize(size);
  std::memcpy(table.data(), p + 4, 8 * size);
  if (format::any_nonfinite_doubles(p + 4, size)) return "non-finite label in the label table";
  rc->labels_finite = true;
  labels.resize(rows);
  const auto* lo = reinterpret_cast<const uint8_t*>(unpacked_plane(codes, 0, rows, 4));
  const auto* hi = reinterpret_cast<const uint8_t*>(unpacked_plane(codes, 1, rows, 5));
  bool bad = false;
  for (uint64_t r = 0; r < rows; ++r) {
    const uint32_t code = lo[r] | uint32_t{hi[r]} << 8;
    bad |= code >= size;
    labels[r] = table[std::min<uint64_t>(code, size - 1)];
  }
  if (bad) return "label code out of range (a table of " + std::to_string(size) + " entries)";
  format::Planes4 planes;
  for (unsigned b = 0; b < 4; ++b) planes[b] = unpacked_plane(lengths, b, rows, b);
  row_nnz.resize(rows);
  format::byte_unshuffle4(planes, reinterpret_cast<std::byte*>(row_nnz.data()), rows);
  rc->labels = reinterpret_cast<const std::byte*>(labels.data());
  rc->row_nnz = reinterpret_cast<const std::byte*>(row_nnz.data());
  *at = lengths_at + lengths.size;
  return {};
}

// A value table's section (VALUE_DICT), where rc points at the values stored and which ends
// at `end`: the table's size, the table, the codes (u16 each, or with PACKED_PLANES a packed
// column of two planes). Looks the values up into this thread's buffer and points rc at them,
// which the decoding then reads as if they had been stored. Returns what is wrong with the
// section, or nothing.
std::string look_up_values(const ChunkInfo& c, const std::byte* end, RawChunk* rc) {
  const std::byte* at = rc->bitmap ? rc->stored_values : rc->values;
  const uint64_t rest = end - at;
  const uint64_t size = rest >= 4 ? load_u32(at) : 0;
  if (size == 0 || size > format::kMaxDictSize || 4 + 4 * size > rest) {
    return "value table of " + std::to_string(size) + " entries does not fit the chunk";
  }
  const std::byte* codes = at + 4 + 4 * size;
  const uint64_t code_bytes = rest - 4 - 4 * size;
  const bool packed = (c.flags & kChunkPackedPlanes) != 0;
  uint64_t count = 0;
  format::PackedColumn col;
  if (packed) {
    count = rc->bitmap ? format::bits_set(rc->bitmap, c.nnz) : c.nnz;
    const std::string why = format::parse_packed_column(codes, code_bytes, 2, count, &col);
    if (!why.empty()) return "value codes: " + why;
    if (col.size != code_bytes) {
      return std::to_string(code_bytes - col.size) + " bytes after the value codes";
    }
  } else {
    if (code_bytes % 2) {
      return "value table of " + std::to_string(size) + " entries does not fit the chunk";
    }
    count = code_bytes / 2;
    if (rc->bitmap ? count > c.nnz : count != c.nnz) {
      return std::to_string(count) + " value codes for " + std::to_string(c.nnz) + " nonzeros";
    }
  }
  thread_local std::vector<float> table, values;
  table.resize(size);
  std::memcpy(table.data(), at + 4, 4 * size);
  // Every value is an entry: checking the entries checks the values.
  if (format::any_nonfinite_floats(at + 4, size)) return "non-finite value in the value table";
  rc->values_finite = true;
  values.resize(std::max<uint64_t>(count, 1));
  const bool ok = packed ? format::decode_dict_planes(unpacked_plane(col, 0, count, 4),
                                                      unpacked_plane(col, 1, count, 5), count,
                                                      table.data(), size, values.data())
                         : format::decode_dict(codes, count, table.data(), size, values.data());
  if (!ok) return "value code out of range (a table of " + std::to_string(size) + " entries)";
  const auto* v = reinterpret_cast<const std::byte*>(values.data());
  if (rc->bitmap) {
    rc->stored_values = v;
    rc->stored_count = count;
  } else {
    rc->values = v;
  }
  return {};
}

// Where the sections of a raw chunk are (docs/format.md), into rc: packed planes unpacked,
// values looked up in a value table. Returns what does not fit, or nothing. (Without packed
// planes the sizes were checked when the store was opened: raw_size_valid.)
std::string locate_sections(const ChunkInfo& c, const std::byte* raw, RawChunk* rc) {
  const uint64_t rows = c.row_count, nnz = c.nnz;
  const std::byte* end = raw + c.raw_size;
  const std::byte* at = raw;
  if (c.flags & kChunkPackedRows) {
    const std::string why = unpack_rows(c, end, &at, rc);
    if (!why.empty()) return why;
  } else {
    rc->labels = raw;
    rc->row_nnz = raw + 8 * rows;
    at = raw + 12 * rows;  // within the chunk (raw_size_valid)
  }
  rc->shuffled = c.codec == Codec::kZstd && (c.flags & kChunkIndexShuffle);
  if (c.flags & kChunkPackedPlanes) {  // only with shuffled (Store::open)
    format::PackedColumn col;
    const std::string why = format::parse_packed_column(at, end - at, 4, nnz, &col);
    if (!why.empty()) return "index column: " + why;
    for (unsigned b = 0; b < 4; ++b) rc->planes[b] = unpacked_plane(col, b, nnz, b);
    at += col.size;
  } else {
    if (static_cast<uint64_t>(end - at) < 4 * nnz) return "index column past the chunk";
    rc->idx = at;
    rc->planes = format::planes4(at, nnz);
    at += 4 * nnz;
  }
  const uint64_t rest = end - at;
  const bool dict = (c.flags & kChunkValueDict) != 0;
  if (c.flags & kChunkSparseValues) {
    const uint64_t bitmap = (nnz + 7) / 8;
    if (rest < bitmap) return "value bitmap past the chunk";
    rc->bitmap = reinterpret_cast<const uint8_t*>(at);
    rc->stored_values = at + bitmap;
    rc->stored_count = (rest - bitmap) / 4;
    if (!dict && ((rest - bitmap) % 4 != 0 || rc->stored_count > nnz)) {
      return std::to_string(rest - bitmap) + " bytes of values stored for " + std::to_string(nnz) +
             " nonzeros";
    }
  } else if (c.flags & kChunkValues) {
    rc->values = at;
    if (!dict && rest != 4 * nnz) {
      return std::to_string(rest) + " bytes of values for " + std::to_string(nnz) + " nonzeros";
    }
  } else if (rest != 0) {
    return std::to_string(rest) + " bytes after the index column";
  }
  return dict ? look_up_values(c, end, rc) : std::string();
}

}  // namespace

void DecodedChunk::populate(void* p, size_t bytes) noexcept {
#ifdef MADV_POPULATE_WRITE
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  constexpr size_t kWorthIt = 256 << 10;
  if (bytes < kWorthIt) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}

void DecodedChunk::append_to(SparseRows* out) const {
  for (uint32_t r = 0; r < row_count_; ++r) {
    out->labels.push_back(labels_[r]);
    for (uint32_t p = offsets_[r]; p < offsets_[r + 1]; ++p) {
      out->indices.push_back(indices_[p]);
      out->values.push_back(values_ ? values_[p] : 1.0f);
    }
    out->offsets.push_back(out->indices.size());
  }
}

uint64_t decoded_words(const ChunkInfo& c) { return decoded_layout(c).words; }

Status Store::read_chunk(size_t k, DecodedChunk* out, Labels labels) const {
  if (k >= chunks_.size()) {
    return Status::invalid_argument(path() + ": chunk " + std::to_string(k) + " out of range");
  }
  ByteSpan stored;
  AGLD_RETURN_IF_ERROR(file_->view(chunks_[k].offset, chunks_[k].stored_size, &stored));
  return decode_chunk(k, stored, out, labels);
}

Status Store::decode_chunk(size_t k, ByteSpan stored, DecodedChunk* out, Labels labels) const {
  if (k >= chunks_.size() || stored.size() != chunks_[k].stored_size) {
    return Status::invalid_argument(path() + ": chunk " + std::to_string(k) +
                                    " out of range or given the wrong number of bytes");
  }
  const ChunkInfo& c = chunks_[k];
  auto corrupt = [&](const std::string& why) {
    return Status::corruption(path() + ": " + chunk_name(k, c) + ": " + why);
  };
  if (crc32c::value(stored.data(), stored.size()) != c.crc) return corrupt("checksum mismatch");

  // The raw chunk: the stored bytes (codec none), or the frame decompressed into this
  // thread's scratch, from where it is decoded into *out.
  const std::byte* raw = stored.data();
  if (c.codec == Codec::kZstd) {
    // Check the frame's declared size before allocating raw_size bytes for it: a damaged
    // (or hostile) index could otherwise ask for up to 4 GiB.
    const unsigned long long declared = ZSTD_getFrameContentSize(stored.data(), stored.size());
    if (declared == ZSTD_CONTENTSIZE_ERROR) return corrupt("zstd: not a zstd frame");
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != c.raw_size) {
      return corrupt("zstd frame holds " + std::to_string(declared) + " bytes, the index says " +
                     std::to_string(c.raw_size));
    }
    thread_local ZstdDCtx dctx;
    thread_local std::vector<uint64_t> scratch;
    scratch.resize((uint64_t{c.raw_size} + 7) / 8);
    auto* dst = reinterpret_cast<std::byte*>(scratch.data());
    const size_t n = ZSTD_decompressDCtx(dctx.ctx, dst, c.raw_size, stored.data(), stored.size());
    if (ZSTD_isError(n)) return corrupt(std::string("zstd: ") + ZSTD_getErrorName(n));
    if (n != c.raw_size) return corrupt("decompressed to the wrong size");
    raw = dst;
  }

  const uint32_t rows = c.row_count;
  RawChunk rc{};
  const std::string why = locate_sections(c, raw, &rc);
  if (!why.empty()) return corrupt(why);
  const DecodedLayout layout = decoded_layout(c);
  out->raw_.resize(layout.words);
  out->offsets_.resize(rows + 1);
  Decoded dc{};
  dc.labels = reinterpret_cast<double*>(out->raw_.data());
  dc.idx = reinterpret_cast<uint32_t*>(out->raw_.data() + layout.idx_word);
  dc.values = (c.flags & (kChunkValues | kChunkSparseValues))
                  ? reinterpret_cast<float*>(out->raw_.data() + layout.values_word)
                  : nullptr;
  dc.offsets = out->offsets_.data();
  if (!finish_fast(c, meta_.features, rc, dc)) {
    AGLD_RETURN_IF_ERROR(explain_chunk(path(), k, c, meta_.features, rc, dc));
  }
  if (labels == Labels::kMapped && meta_.label_kind == LabelKind::kBinary) {
    const double pos = meta_.label_positive;
    for (uint32_t r = 0; r < rows; ++r) dc.labels[r] = dc.labels[r] == pos ? 1.0 : -1.0;
  }
  out->first_row_ = c.first_row;
  out->row_count_ = rows;
  out->nnz_ = c.nnz;
  out->labels_ = dc.labels;
  out->indices_ = dc.idx;
  out->values_ = dc.values;
  return Status::ok();
}

}  // namespace agld
