// Byte-level encoding of the store's header, footer, chunk index and metadata
// (docs/format.md). Internal to the store layer.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld::format {

static_assert(std::endian::native == std::endian::little, "agld assumes a little-endian host");

inline constexpr uint64_t kMagic = 0x31525453444C4741ull;  // "AGLDSTR1"
inline constexpr size_t kHeaderSize = 16;
inline constexpr size_t kFooterSize = 64;
inline constexpr size_t kIndexEntrySize = 40;
inline constexpr uint8_t kKnownFlags =
    kChunkValues | kChunkDelta | kChunkSparseValues | kChunkIndexShuffle | kChunkValueDict |
    kChunkPackedPlanes | kChunkPackedRows;
inline constexpr uint64_t kMaxDictSize = 65536;  // table entries (u16 codes)

template <typename T>
inline void put(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
template <typename T>
inline T get(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

struct Footer {
  uint64_t meta_offset = 0, meta_size = 0, index_offset = 0, chunk_count = 0;
  uint32_t meta_crc = 0, index_crc = 0, version = kFormatVersion;
};

void encode_header(std::byte* out);  // kHeaderSize bytes
void encode_footer(const Footer& f, std::byte* out);  // kFooterSize bytes
// Checks magic, version (against the header's, given) and CRC.
Status decode_footer(const std::byte* in, uint32_t header_version, Footer* f);

void encode_index_entry(const ChunkInfo& c, std::byte* out);
ChunkInfo decode_index_entry(const std::byte* in);

std::string encode_meta(const StoreMeta& meta);
Status decode_meta(const std::string& text, StoreMeta* meta);

// Bytes of the raw chunk before its value section.
inline uint64_t raw_prefix_size(uint64_t rows, uint64_t nnz) { return 12 * rows + 4 * nnz; }

// raw_size of a chunk with dense or no values.
inline uint64_t raw_size_for(uint64_t rows, uint64_t nnz, uint8_t flags) {
  return raw_prefix_size(rows, nnz) + ((flags & kChunkValues) ? 4 * nnz : 0);
}

// Whether a raw_size is possible for the shape and flags: exact for dense or no values;
// for sparse values, room for the bitmap and a whole number of at most nnz values. With a
// value table (its size is in the chunk): room for the size, one entry and, dense, the nnz
// codes; whole entries and codes (the table's size and the codes are checked when the chunk
// is decoded). With packed planes or rows, whose sizes are in the chunk: bounds only, from
// the smallest sections (every plane 0 bits, tables of one entry) to the largest.
inline bool raw_size_valid(uint64_t rows, uint64_t nnz, uint8_t flags, uint64_t raw_size) {
  const bool sparse = (flags & kChunkSparseValues) != 0;
  if ((flags & (kChunkSparseValues | kChunkValueDict)) && !(flags & kChunkValues)) return false;
  if (flags & (kChunkPackedPlanes | kChunkPackedRows)) {
    const uint64_t bitmap = sparse ? (nnz + 7) / 8 : 0;
    uint64_t least = 0, most = 0;
    if (flags & kChunkPackedRows) {  // label table and codes, row lengths
      least = 4 + 8 + 2 + 4;
      most = 4 + 8 * kMaxDictSize + 2 + 2 * rows + 4 + 4 * rows;
    } else {
      least = most = 12 * rows;
    }
    least += (flags & kChunkPackedPlanes) ? 4 : 4 * nnz;
    most += 4 + 4 * nnz;
    if (flags & kChunkValueDict) {
      least += bitmap + 4 + 4;
      most += bitmap + 4 + 4 * kMaxDictSize + 2 + 2 * nnz;
    } else if (flags & kChunkValues) {
      least += sparse ? bitmap : 4 * nnz;
      most += bitmap + 4 * nnz;
    }
    return raw_size >= least && raw_size <= most;
  }
  if (flags & kChunkValueDict) {
    const uint64_t fixed = raw_prefix_size(rows, nnz) + (sparse ? (nnz + 7) / 8 : 2 * nnz) + 8;
    if (raw_size < fixed) return false;
    return sparse ? (raw_size - fixed) % 2 == 0
                  : (raw_size - fixed) % 4 == 0 && (raw_size - fixed) / 4 < kMaxDictSize;
  }
  if (!sparse) return raw_size == raw_size_for(rows, nnz, flags);
  const uint64_t fixed = raw_prefix_size(rows, nnz) + (nnz + 7) / 8;
  return raw_size >= fixed && (raw_size - fixed) % 4 == 0 && (raw_size - fixed) / 4 <= nnz;
}

// The byte planes of a byte-transposed column of 4-byte elements: byte b of element i at
// plane b, offset i. A column stored whole has plane b at column + b n (planes4).
using Planes4 = std::array<const std::byte*, 4>;
inline Planes4 planes4(const std::byte* column, uint64_t n) {
  return {column, column + n, column + 2 * n, column + 3 * n};
}

// Byte-transposes n 4-byte elements: dst[b * n + i] = src[4 * i + b], and back.
void byte_shuffle4(const std::byte* src, std::byte* dst, uint64_t n);
void byte_unshuffle4(const Planes4& src, std::byte* dst, uint64_t n);
// Element i of a byte-transposed column (what byte_unshuffle4 puts at dst + 4 i).
inline uint32_t unshuffled4(const Planes4& src, uint64_t i) {
  auto byte = [&](int b) { return uint32_t{reinterpret_cast<const uint8_t*>(src[b])[i]}; };
  return byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24;
}

// Packed planes (PACKED_PLANES, docs/format.md): a byte plane of n elements each below 2^w
// stored in w bits an element, w = 0, 1, 2, 4 or 8: element i in the w bits from bit
// w (i mod 8/w) of byte i / (8/w), least significant first; w = 0 stores nothing (every
// element is 0).
inline bool plane_width_valid(unsigned w) { return w <= 2 || w == 4 || w == 8; }
// The least width that holds every byte whose bitwise OR is `any`.
inline unsigned plane_width(uint8_t any) {
  const unsigned bits = static_cast<unsigned>(std::bit_width(any));
  return bits <= 2 ? bits : bits <= 4 ? 4 : 8;
}
inline uint64_t packed_plane_size(uint64_t n, unsigned w) { return (n * w + 7) / 8; }
// Packs the n bytes of a plane, each below 2^w, into packed_plane_size(n, w) bytes.
void pack_plane(const std::byte* plane, uint64_t n, unsigned w, std::byte* out);

// A packed column of k <= 4 byte planes of n elements: u8 width[k], then each plane packed
// to its width, in order.
struct PackedColumn {
  std::array<unsigned, 4> width{};
  std::array<const std::byte*, 4> plane{};  // packed; nullptr for width 0
  uint64_t size = 0;                        // bytes in all
};
// Reads a packed column's widths at `at` (with `avail` bytes from there) and where its planes
// are: empty, or what is wrong (a width not allowed, planes past avail).
std::string parse_packed_column(const std::byte* at, uint64_t avail, unsigned k, uint64_t n,
                                PackedColumn* out);
// The widths for the k planes of n bytes at planes + b n (each the least that holds the
// plane), the bytes the column packed with them takes, and the column written.
void plane_widths(const std::byte* planes, unsigned k, uint64_t n, unsigned* widths);
uint64_t packed_column_size(const unsigned* widths, unsigned k, uint64_t n);
uint64_t write_packed_column(const std::byte* planes, const unsigned* widths, unsigned k,
                             uint64_t n, std::byte* out);

}  // namespace agld::format
