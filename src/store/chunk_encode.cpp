// Encoding chunks (docs/format.md): rows laid out as a raw chunk in the smallest of the
// layouts the codec allows (values dense, sparse or as codes into a table; labels as codes and
// row lengths packed; the index column delta-coded, byte-transposed and its planes packed),
// then compressed.
#include "agld/store.hpp"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_c_literalCompressionMode (encode_chunk)
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "store/crc32c.hpp"
#include "store/format.hpp"
#include "store/zstd_ctx.hpp"

namespace agld {
namespace {

using store_detail::ZstdCCtx;


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

}  // namespace agld
