// Reading and writing stores (docs/format.md).
#include "agld/store.hpp"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_c_literalCompressionMode (encode_chunk)
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "store/crc32c.hpp"
#include "store/kernels.hpp"
#include "store/feature_stats_format.hpp"
#include "store/format.hpp"
#include "store/zstd_ctx.hpp"

namespace agld {

using format::get;
using format::kFooterSize;
using format::kHeaderSize;
using format::kIndexEntrySize;

namespace {

using store_detail::ZstdCCtx;
using store_detail::ZstdDCtx;


std::string chunk_name(size_t k, const ChunkInfo& c) {
  return "chunk " + std::to_string(k) + " (rows " + std::to_string(c.first_row) + ".." +
         std::to_string(c.first_row + c.row_count - 1) + ", file offset " +
         std::to_string(c.offset) + ")";
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

Store::~Store() = default;

const std::string& Store::path() const { return file_->path(); }
uint64_t Store::file_size() const { return file_->size(); }

size_t Store::chunk_of_row(uint64_t row) const {
  auto it = std::upper_bound(chunks_.begin(), chunks_.end(), row,
                             [](uint64_t r, const ChunkInfo& c) { return r < c.first_row; });
  return static_cast<size_t>(it - chunks_.begin()) - 1;
}

Status Store::open(const std::string& path, std::unique_ptr<Store>* out, FileSystem& fs) {
  std::unique_ptr<Store> s(new Store());
  AGLD_RETURN_IF_ERROR(fs.open_readable(path, &s->file_));
  const ReadableFile& f = *s->file_;
  const uint64_t size = f.size();
  auto fail = [&](Status st) { return st.with_context(path); };
  if (size < kHeaderSize + kFooterSize) {
    ByteSpan head;
    if (size < 8 || (f.view(0, 8, &head).is_ok() && get<uint64_t>(head.data()) != format::kMagic)) {
      return fail(Status::corruption("not an agld store (no store magic; " + std::to_string(size) +
                                     " bytes)"));
    }
    return fail(Status::corruption("file is " + std::to_string(size) +
                                   " bytes, too short to be a store (truncated?)"));
  }
  ByteSpan header, footer_bytes;
  AGLD_RETURN_IF_ERROR(f.view(0, kHeaderSize, &header));
  AGLD_RETURN_IF_ERROR(f.view(size - kFooterSize, kFooterSize, &footer_bytes));
  const bool header_magic = get<uint64_t>(header.data()) == format::kMagic;
  if (!header_magic && get<uint64_t>(footer_bytes.data() + 56) != format::kMagic) {
    return fail(Status::corruption("not an agld store (no store magic)"));
  }
  format::Footer ft;
  Status st = format::decode_footer(footer_bytes.data(), get<uint32_t>(header.data() + 8), &ft);
  if (!st.is_ok()) {
    if (header_magic && st.code() == Status::Code::kCorruption &&
        get<uint64_t>(footer_bytes.data() + 56) != format::kMagic) {
      return fail(Status::corruption("truncated or corrupt: no footer at the end of the file (" +
                                     std::to_string(size) + " bytes)"));
    }
    return fail(st);
  }
  if (!header_magic) return fail(Status::corruption("header: bad magic"));
  if (get<uint32_t>(header.data() + 8) != kFormatVersion) {
    return fail(Status::corruption("header: format version disagrees with the footer"));
  }
  if (get<uint32_t>(header.data() + 12) != 0) {
    return fail(Status::corruption("header: reserved bytes are not zero"));
  }
  // Layout: every region inside the file, in order, without overflow.
  const uint64_t footer_at = size - kFooterSize;
  if (ft.chunk_count > (footer_at - kHeaderSize) / kIndexEntrySize ||
      ft.index_offset != footer_at - ft.chunk_count * kIndexEntrySize ||
      ft.meta_offset < kHeaderSize || ft.meta_offset > ft.index_offset ||
      ft.meta_size != ft.index_offset - ft.meta_offset) {
    return fail(Status::corruption("footer: inconsistent layout (metadata at " +
                                   std::to_string(ft.meta_offset) + ", index at " +
                                   std::to_string(ft.index_offset) + ", " +
                                   std::to_string(ft.chunk_count) + " chunks, file " +
                                   std::to_string(size) + " bytes)"));
  }
  s->meta_offset_ = ft.meta_offset;
  s->meta_size_ = ft.meta_size;
  s->meta_crc_ = ft.meta_crc;
  // The metadata region: the JSON text alone, or (docs/format.md, "Feature statistics") the
  // text, a NUL and the feature statistics, whose trailer ends the region and holds the
  // text's own CRC. Then only the text is read here, not the statistics.
  ByteSpan trailer_bytes;
  const bool has_trailer = ft.meta_size >= format::kStatsTrailerSize + 1;
  if (has_trailer) {
    AGLD_RETURN_IF_ERROR(f.view(ft.index_offset - format::kStatsTrailerSize,
                                format::kStatsTrailerSize, &trailer_bytes));
  }
  uint64_t json_size = ft.meta_size;
  format::StatsTrailer trailer;
  const bool with_stats = has_trailer && format::has_stats_magic(trailer_bytes.data());
  if (with_stats) {
    st = format::decode_stats_trailer(trailer_bytes.data(), &trailer);
    if (!st.is_ok()) return fail(Status::corruption("metadata: " + st.message()));
    if (trailer.json_size > ft.meta_size - format::kStatsTrailerSize - 1) {
      return fail(Status::corruption("metadata: feature statistics trailer: the JSON text's size " +
                                     std::to_string(trailer.json_size) + " is past the region"));
    }
    json_size = trailer.json_size;
  }
  ByteSpan meta_bytes, index_bytes;
  AGLD_RETURN_IF_ERROR(f.view(ft.meta_offset, with_stats ? json_size + 1 : ft.meta_size, &meta_bytes));
  AGLD_RETURN_IF_ERROR(f.view(ft.index_offset, ft.chunk_count * kIndexEntrySize, &index_bytes));
  const uint32_t meta_crc = with_stats ? trailer.json_crc : ft.meta_crc;
  if (crc32c::value(meta_bytes.data(), json_size) != meta_crc) {
    return fail(Status::corruption("metadata: checksum mismatch"));
  }
  if (with_stats && meta_bytes[json_size] != std::byte{0}) {
    return fail(Status::corruption("metadata: no NUL after the JSON text"));
  }
  if (crc32c::value(index_bytes.data(), index_bytes.size()) != ft.index_crc) {
    return fail(Status::corruption("chunk index: checksum mismatch"));
  }
  st = format::decode_meta(std::string(reinterpret_cast<const char*>(meta_bytes.data()), json_size),
                           &s->meta_);
  if (!st.is_ok()) return fail(st);
  const StoreMeta& m = s->meta_;
  if (with_stats && trailer.version == format::kStatsVersion) {
    // The section's layout, from the trailer: blocks from after the NUL to the table, which
    // ends at the trailer. Blocks and table are checked when they are read.
    FeatureStatsSection sec;
    sec.offset = ft.meta_offset + json_size + 1;
    sec.features = trailer.features;
    sec.block_features = trailer.block_features;
    sec.block_count = trailer.block_count;
    sec.table_crc = trailer.table_crc;
    sec.codec = static_cast<Codec>(trailer.codec);
    const uint64_t table_bytes = uint64_t{trailer.block_count} * format::kStatsEntrySize;
    const uint64_t room = ft.meta_size - format::kStatsTrailerSize - (json_size + 1);
    std::string why;
    if (trailer.features != m.features) {
      why = "statistics of " + std::to_string(trailer.features) + " features, metadata says " +
            std::to_string(m.features);
    } else if (trailer.block_features == 0 ||
               trailer.block_count != format::stats_block_count(m.features, trailer.block_features)) {
      why = std::to_string(trailer.block_count) + " blocks of " +
            std::to_string(trailer.block_features) + " features";
    } else if (sec.codec != Codec::kNone && sec.codec != Codec::kZstd) {
      why = "unknown codec " + std::to_string(trailer.codec);
    } else if (table_bytes > room) {
      why = "block table past the region";
    }
    if (!why.empty()) return fail(Status::corruption("metadata: feature statistics trailer: " + why));
    sec.table_offset = ft.index_offset - format::kStatsTrailerSize - table_bytes;
    s->stats_ = sec;
  }
  if (m.features > (uint64_t{1} << 32)) {
    return fail(Status::corruption("metadata: features " + std::to_string(m.features) +
                                   " exceeds the format's 32-bit indices"));
  }
  s->chunks_.resize(ft.chunk_count);
  uint64_t expect_offset = kHeaderSize, expect_row = 0, nnz = 0;
  for (size_t k = 0; k < ft.chunk_count; ++k) {
    const std::byte* entry = index_bytes.data() + k * kIndexEntrySize;
    ChunkInfo c = format::decode_index_entry(entry);
    std::string why;
    if (get<uint16_t>(entry + 38) != 0) {
      why = "reserved bytes are not zero";
    } else if (c.offset != expect_offset) {
      why = "offset " + std::to_string(c.offset) + ", expected " + std::to_string(expect_offset);
    } else if (c.stored_size > ft.meta_offset - c.offset) {
      why = "extends past the chunk area";
    } else if (c.first_row != expect_row) {
      why = "first row " + std::to_string(c.first_row) + ", expected " + std::to_string(expect_row);
    } else if (c.row_count == 0) {
      why = "no rows";
    } else if (c.codec != Codec::kNone && c.codec != Codec::kZstd) {
      why = "unknown codec " + std::to_string(static_cast<int>(c.codec));
    } else if ((c.flags & ~format::kKnownFlags) != 0) {
      why = "unknown flags " + std::to_string(c.flags);
    } else if (!format::raw_size_valid(c.row_count, c.nnz, c.flags, c.raw_size)) {
      why = "raw size " + std::to_string(c.raw_size) + " does not match its shape";
    } else if (c.codec == Codec::kNone && c.stored_size != c.raw_size) {
      why = "uncompressed but stored size differs from raw size";
    } else if (c.codec == Codec::kNone && (c.flags & kChunkValueDict)) {
      why = "a value table in an uncompressed chunk";  // rows are read in place from those
    } else if ((c.flags & kChunkPackedPlanes) &&
               (c.codec == Codec::kNone || !(c.flags & kChunkIndexShuffle))) {
      why = "packed planes without a compressed, byte-transposed index column";
    } else if (c.codec == Codec::kNone && (c.flags & kChunkPackedRows)) {
      why = "packed rows in an uncompressed chunk";
    }
    if (!why.empty()) {
      return fail(Status::corruption("chunk index entry " + std::to_string(k) + ": " + why));
    }
    s->chunks_[k] = c;
    expect_offset += c.stored_size;
    expect_row += c.row_count;
    nnz += c.nnz;
  }
  if (expect_offset != ft.meta_offset) {
    return fail(Status::corruption("chunk index: chunks end at " + std::to_string(expect_offset) +
                                   " but metadata starts at " + std::to_string(ft.meta_offset)));
  }
  if (expect_row != m.rows || nnz != m.nnz) {
    return fail(Status::corruption("chunk index: chunks hold " + std::to_string(expect_row) +
                                   " rows and " + std::to_string(nnz) +
                                   " nonzeros, metadata says " + std::to_string(m.rows) + " and " +
                                   std::to_string(m.nnz)));
  }
  *out = std::move(s);
  return Status::ok();
}

Status Store::verify_metadata_region() const {
  ByteSpan region;
  AGLD_RETURN_IF_ERROR(file_->view(meta_offset_, meta_size_, &region));
  if (crc32c::value(region.data(), region.size()) != meta_crc_) {
    return Status::corruption(path() + ": metadata: checksum mismatch (the footer's, over the " +
                              "whole region)");
  }
  return Status::ok();
}

Status Store::read_chunk(size_t k, DecodedChunk* out, Labels labels) const {
  if (k >= chunks_.size()) {
    return Status::invalid_argument(path() + ": chunk " + std::to_string(k) + " out of range");
  }
  ByteSpan stored;
  AGLD_RETURN_IF_ERROR(file_->view(chunks_[k].offset, chunks_[k].stored_size, &stored));
  return decode_chunk(k, stored, out, labels);
}

namespace {

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

}  // namespace

namespace {

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

bool rows_shuffled(const StoreMeta& meta) { return meta.options.shuffle; }

uint64_t decoded_words(const ChunkInfo& c) { return decoded_layout(c).words; }

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

namespace {

// A chunk's table of distinct values (docs/format.md: VALUE_DICT for the values, of f32;
// PACKED_ROWS for the labels, of f64): the values first seen first, and a u16 code for each,
// found through an open-addressing hash of the values' bits (sized to the chunk, cleared per
// chunk).
template <typename T>
class ValueTable {
  using Key = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

 public:
  // From the `count` values coded: those of vals[0, n) other than 1 (skip_ones), or all.
  // Whether the table and codes (packed planes, or u16 each) are smaller than the values
  // themselves (and the table fits u16).
  bool build(const T* vals, uint64_t n, bool skip_ones, uint64_t count, bool packed) {
    unsigned bits = 4;
    while ((uint64_t{1} << bits) < 2 * std::min<uint64_t>(count, format::kMaxDictSize)) ++bits;
    slots_.assign(size_t{1} << bits, 0);
    keys_.resize(size_t{1} << bits);
    table_.clear();
    codes_.clear();
    codes_.reserve(count);
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    for (uint64_t k = 0; k < n; ++k) {
      if (skip_ones && vals[k] == T{1}) continue;
      Key key;
      std::memcpy(&key, vals + k, sizeof(T));
      uint64_t h = (uint64_t{key} * 0x9E3779B97F4A7C15ull) >> (64 - bits);
      for (; slots_[h] != 0 && keys_[h] != key; h = (h + 1) & mask) {
      }
      if (slots_[h] == 0) {
        if (table_.size() == format::kMaxDictSize) return false;
        table_.push_back(key);
        keys_[h] = key;
        slots_[h] = static_cast<uint32_t>(table_.size());  // code + 1
      }
      codes_.push_back(static_cast<uint16_t>(slots_[h] - 1));
    }
    packed_ = packed;
    if (packed) {  // the codes' two byte planes, and the bits each needs
      const uint64_t m = codes_.size();
      planes_.resize(2 * m);
      for (uint64_t i = 0; i < m; ++i) {
        planes_[i] = static_cast<std::byte>(codes_[i] & 0xff);
        planes_[m + i] = static_cast<std::byte>(codes_[i] >> 8);
      }
      format::plane_widths(planes_.data(), 2, m, widths_);
    }
    return bytes() < sizeof(T) * count;
  }
  // Bytes of the section: the table's size, the table, the codes.
  uint64_t bytes() const {
    return 4 + sizeof(T) * table_.size() +
           (packed_ ? format::packed_column_size(widths_, 2, codes_.size()) : 2 * codes_.size());
  }
  void write(std::byte* p) const {
    format::put<uint32_t>(p, static_cast<uint32_t>(table_.size()));
    std::memcpy(p + 4, table_.data(), sizeof(T) * table_.size());
    std::byte* codes = p + 4 + sizeof(T) * table_.size();
    if (packed_) {
      format::write_packed_column(planes_.data(), widths_, 2, codes_.size(), codes);
    } else {
      std::memcpy(codes, codes_.data(), 2 * codes_.size());
    }
  }

 private:
  std::vector<uint32_t> slots_;
  std::vector<Key> keys_, table_;
  std::vector<uint16_t> codes_;
  bool packed_ = false;
  std::vector<std::byte> planes_;  // packed: the codes' low bytes, then their high bytes
  unsigned widths_[2] = {8, 8};
};

template <typename T>
ValueTable<T>& value_table() {
  thread_local ValueTable<T> t;
  return t;
}

}  // namespace

Status encode_chunk(const SparseRows& rows, size_t r0, size_t r1, const ChunkCodec& codec,
                    EncodedChunk* out) {
  const uint64_t n = r1 - r0;
  const uint64_t nnz = rows.offsets[r1] - rows.offsets[r0];
  const float* vals = rows.values.data() + rows.offsets[r0];
  uint64_t not_one = 0;
  for (uint64_t p = 0; p < nnz; ++p) not_one += vals[p] != 1.0f;
  // Values: none when all are 1; else whichever of dense or bitmap + non-ones is smaller.
  const uint64_t sparse_bytes = (nnz + 7) / 8 + 4 * not_one;
  const bool sparse = not_one > 0 && sparse_bytes < 4 * nnz;
  const bool delta = codec.codec == Codec::kZstd && codec.delta;
  const bool shuffle = codec.codec == Codec::kZstd && codec.index_shuffle;
  const bool packed = shuffle && codec.packed_planes;
  // The index column: delta-coded, byte-transposed and its planes packed as asked.
  const uint32_t* idx = rows.indices.data() + rows.offsets[r0];
  thread_local std::vector<uint32_t> deltas;
  if (delta) {
    deltas.resize(nnz);
    for (size_t r = r0; r < r1; ++r) {
      for (uint64_t q = rows.offsets[r]; q < rows.offsets[r + 1]; ++q) {
        const uint64_t at = q - rows.offsets[r0];
        deltas[at] = q == rows.offsets[r] ? rows.indices[q] : rows.indices[q] - rows.indices[q - 1];
      }
    }
    idx = deltas.data();
  }
  thread_local std::vector<std::byte> planes;
  unsigned widths[4];
  if (shuffle) {
    planes.resize(4 * nnz);
    format::byte_shuffle4(reinterpret_cast<const std::byte*>(idx), planes.data(), nnz);
    if (packed) format::plane_widths(planes.data(), 4, nnz, widths);
  }
  const uint64_t index_bytes = packed ? format::packed_column_size(widths, 4, nnz) : 4 * nnz;
  // The labels as codes into a table, and the row lengths packed, where smaller.
  ValueTable<double>& labels = value_table<double>();
  const bool packed_rows = codec.codec == Codec::kZstd && codec.packed_rows &&
                           labels.build(rows.labels.data() + r0, n, false, n, true);
  thread_local std::vector<uint32_t> lengths;
  thread_local std::vector<std::byte> length_planes;
  unsigned length_widths[4];
  if (packed_rows) {
    lengths.resize(n);
    for (size_t r = r0; r < r1; ++r) {
      lengths[r - r0] = static_cast<uint32_t>(rows.offsets[r + 1] - rows.offsets[r]);
    }
    length_planes.resize(4 * n);
    format::byte_shuffle4(reinterpret_cast<const std::byte*>(lengths.data()), length_planes.data(), n);
    format::plane_widths(length_planes.data(), 4, n, length_widths);
  }
  const uint64_t rows_bytes =
      packed_rows ? labels.bytes() + format::packed_column_size(length_widths, 4, n) : 12 * n;
  // The values stored (those other than 1, or all) as codes into a table, where smaller.
  ValueTable<float>& table = value_table<float>();
  const bool dict = codec.codec == Codec::kZstd && codec.value_dict && not_one > 0 &&
                    table.build(vals, nnz, sparse, sparse ? not_one : nnz, packed);
  const uint8_t flags = (not_one ? kChunkValues : 0) | (sparse ? kChunkSparseValues : 0) |
                        (delta ? kChunkDelta : 0) | (shuffle ? kChunkIndexShuffle : 0) |
                        (dict ? kChunkValueDict : 0) | (packed ? kChunkPackedPlanes : 0) |
                        (packed_rows ? kChunkPackedRows : 0);
  const uint64_t values_bytes = dict     ? (sparse ? (nnz + 7) / 8 : 0) + table.bytes()
                                : sparse ? sparse_bytes
                                         : (not_one ? 4 * nnz : 0);
  const uint64_t raw_size = rows_bytes + index_bytes + values_bytes;
  if (n == 0 || n > std::numeric_limits<uint32_t>::max() ||
      nnz > std::numeric_limits<uint32_t>::max() || raw_size > std::numeric_limits<uint32_t>::max()) {
    return Status::invalid_argument("chunk of " + std::to_string(n) + " rows and " +
                                    std::to_string(nnz) + " nonzeros does not fit the format");
  }
  thread_local std::vector<std::byte> scratch;
  std::vector<std::byte>& raw = codec.codec == Codec::kNone ? out->bytes : scratch;
  raw.resize(raw_size + 4);  // 4 spare bytes for the branch-free sparse value writer
  std::byte* p = raw.data();
  if (packed_rows) {
    labels.write(p);
    p += labels.bytes();
    p += format::write_packed_column(length_planes.data(), length_widths, 4, n, p);
  } else {
    std::memcpy(p, rows.labels.data() + r0, 8 * n);
    p += 8 * n;
    for (size_t r = r0; r < r1; ++r) {
      format::put<uint32_t>(p, static_cast<uint32_t>(rows.offsets[r + 1] - rows.offsets[r]));
      p += 4;
    }
  }
  if (packed) {
    format::write_packed_column(planes.data(), widths, 4, nnz, p);
  } else if (nnz > 0) {
    std::memcpy(p, shuffle ? planes.data() : reinterpret_cast<const std::byte*>(idx), 4 * nnz);
  }
  p += index_bytes;
  if (sparse && dict) {
    auto* bitmap = reinterpret_cast<uint8_t*>(p);
    std::memset(bitmap, 0, (nnz + 7) / 8);
    for (uint64_t k = 0; k < nnz; ++k) {
      bitmap[k >> 3] = static_cast<uint8_t>(bitmap[k >> 3] | ((vals[k] != 1.0f) << (k & 7)));
    }
    table.write(p + (nnz + 7) / 8);
  } else if (dict) {
    table.write(p);
  } else if (sparse) {
    auto* bitmap = reinterpret_cast<uint8_t*>(p);
    std::memset(bitmap, 0, (nnz + 7) / 8);
    std::byte* q = p + (nnz + 7) / 8;
    // Branch-free: every value is written, and the cursor moves past the ones kept; the
    // last write may land in the 4 spare bytes after the section.
    for (uint64_t k = 0; k < nnz; ++k) {
      const uint32_t keep = vals[k] != 1.0f;
      bitmap[k >> 3] = static_cast<uint8_t>(bitmap[k >> 3] | (keep << (k & 7)));
      format::put<float>(q, vals[k]);
      q += 4 * keep;
    }
  } else if (not_one) {
    std::memcpy(p, vals, 4 * nnz);
  }
  raw.resize(raw_size);

  if (codec.codec == Codec::kZstd) {
    thread_local ZstdCCtx cctx;
    out->bytes.resize(ZSTD_compressBound(raw_size));
    size_t m;
    if (codec.raw_literals) {
      // Literals stored as they are: the frame is standard zstd, only the compressor's
      // parameter is experimental (ZSTD_STATIC_LINKING_ONLY; libzstd accepts it at run time).
      thread_local ZstdCCtx raw_cctx;
      ZSTD_CCtx_setParameter(raw_cctx.ctx, ZSTD_c_compressionLevel, codec.level);
      const size_t set = ZSTD_CCtx_setParameter(raw_cctx.ctx, ZSTD_c_literalCompressionMode,
                                                ZSTD_ps_disable);
      if (ZSTD_isError(set)) {
        return Status::not_supported(std::string("zstd: raw literals: ") + ZSTD_getErrorName(set));
      }
      m = ZSTD_compress2(raw_cctx.ctx, out->bytes.data(), out->bytes.size(), raw.data(), raw_size);
    } else {
      m = ZSTD_compressCCtx(cctx.ctx, out->bytes.data(), out->bytes.size(), raw.data(), raw_size,
                            codec.level);
    }
    if (ZSTD_isError(m)) return Status::internal(std::string("zstd: ") + ZSTD_getErrorName(m));
    out->bytes.resize(m);
  }
  ChunkInfo& c = out->info;
  c = ChunkInfo{};
  c.stored_size = static_cast<uint32_t>(out->bytes.size());
  c.raw_size = static_cast<uint32_t>(raw_size);
  c.row_count = static_cast<uint32_t>(n);
  c.nnz = static_cast<uint32_t>(nnz);
  c.crc = crc32c::value(out->bytes.data(), out->bytes.size());
  c.codec = codec.codec;
  c.flags = flags;
  return Status::ok();
}

StoreWriter::~StoreWriter() = default;

Status StoreWriter::create(const std::string& path, std::unique_ptr<StoreWriter>* out,
                           FileSystem& fs) {
  std::unique_ptr<StoreWriter> w(new StoreWriter());
  AGLD_RETURN_IF_ERROR(fs.create_atomic(path, &w->file_));
  std::byte header[kHeaderSize];
  format::encode_header(header);
  AGLD_RETURN_IF_ERROR(w->file_->append(header));
  w->offset_ = kHeaderSize;
  *out = std::move(w);
  return Status::ok();
}

uint64_t StoreWriter::bytes_written() const { return file_->size(); }

Status StoreWriter::add_chunk(const EncodedChunk& chunk) {
  if (finished_) return Status::internal("add_chunk after finish");
  ChunkInfo c = chunk.info;
  c.offset = offset_;
  c.first_row = rows_;
  AGLD_RETURN_IF_ERROR(file_->append(chunk.bytes));
  offset_ += c.stored_size;
  rows_ += c.row_count;
  nnz_ += c.nnz;
  chunks_.push_back(c);
  return Status::ok();
}

Status StoreWriter::finish_uncommitted(StoreMeta meta) {
  if (finished_) return Status::internal("finish called twice");
  finished_ = true;
  meta.rows = rows_;
  meta.nnz = nnz_;
  const std::string text = format::encode_meta(meta);
  std::vector<std::byte> index(chunks_.size() * kIndexEntrySize);
  for (size_t k = 0; k < chunks_.size(); ++k) {
    format::encode_index_entry(chunks_[k], index.data() + k * kIndexEntrySize);
  }
  format::Footer ft;
  ft.meta_offset = offset_;
  ft.meta_size = text.size();
  ft.chunk_count = chunks_.size();
  ft.meta_crc = crc32c::value(text.data(), text.size());
  ft.index_crc = crc32c::value(index.data(), index.size());
  AGLD_RETURN_IF_ERROR(file_->append(std::as_bytes(std::span(text.data(), text.size()))));
  if (stats_fill_) {
    // The text, a NUL that ends it for every reader, then the statistics, written as they
    // are filled; the footer's CRC covers the whole region.
    const uint32_t json_crc = ft.meta_crc;
    const std::byte nul{0};
    AGLD_RETURN_IF_ERROR(file_->append(ByteSpan(&nul, 1)));
    ft.meta_crc = crc32c::extend(ft.meta_crc, &nul, 1);
    ft.meta_size += 1;
    const bool none = meta.options.compression == "none";
    AGLD_RETURN_IF_ERROR(format::append_stats_section(
        file_.get(), stats_fill_, meta.features, stats_block_, none ? Codec::kNone : Codec::kZstd,
        none ? 1 : meta.options.level, offset_ + ft.meta_size, text.size(), json_crc, &ft.meta_crc,
        &ft.meta_size));
  }
  ft.index_offset = offset_ + ft.meta_size;
  std::byte footer[kFooterSize];
  format::encode_footer(ft, footer);
  AGLD_RETURN_IF_ERROR(file_->append(index));
  AGLD_RETURN_IF_ERROR(file_->append(footer));
  return Status::ok();
}

Status StoreWriter::commit() { return file_->commit(); }

Status StoreWriter::finish(StoreMeta meta) {
  AGLD_RETURN_IF_ERROR(finish_uncommitted(std::move(meta)));
  return commit();
}

}  // namespace agld
