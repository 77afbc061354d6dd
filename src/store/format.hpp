// Byte-level encoding of the store's header, footer, chunk index and metadata
// (docs/format.md). Internal to the store layer.
#pragma once

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
    kChunkValues | kChunkDelta | kChunkSparseValues | kChunkIndexShuffle | kChunkValueDict;
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
// is decoded).
inline bool raw_size_valid(uint64_t rows, uint64_t nnz, uint8_t flags, uint64_t raw_size) {
  const bool sparse = (flags & kChunkSparseValues) != 0;
  if (flags & kChunkValueDict) {
    if (!(flags & kChunkValues)) return false;
    const uint64_t fixed = raw_prefix_size(rows, nnz) + (sparse ? (nnz + 7) / 8 : 2 * nnz) + 8;
    if (raw_size < fixed) return false;
    return sparse ? (raw_size - fixed) % 2 == 0
                  : (raw_size - fixed) % 4 == 0 && (raw_size - fixed) / 4 < kMaxDictSize;
  }
  if (!sparse) return raw_size == raw_size_for(rows, nnz, flags);
  if (!(flags & kChunkValues)) return false;
  const uint64_t fixed = raw_prefix_size(rows, nnz) + (nnz + 7) / 8;
  return raw_size >= fixed && (raw_size - fixed) % 4 == 0 && (raw_size - fixed) / 4 <= nnz;
}

// Byte-transposes n 4-byte elements: dst[b * n + i] = src[4 * i + b], and back.
void byte_shuffle4(const std::byte* src, std::byte* dst, uint64_t n);
void byte_unshuffle4(const std::byte* src, std::byte* dst, uint64_t n);
// Element i of n byte-transposed 4-byte elements (what byte_unshuffle4 puts at dst + 4 i).
inline uint32_t unshuffled4(const std::byte* src, uint64_t n, uint64_t i) {
  const auto* b = reinterpret_cast<const uint8_t*>(src) + i;
  return uint32_t{b[0]} | uint32_t{b[n]} << 8 | uint32_t{b[2 * n]} << 16 | uint32_t{b[3 * n]} << 24;
}

}  // namespace agld::format
