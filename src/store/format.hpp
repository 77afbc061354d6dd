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
inline constexpr uint8_t kKnownFlags = kChunkValues | kChunkDelta;

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

// raw_size implied by a chunk's shape and flags.
inline uint64_t raw_size_for(uint64_t rows, uint64_t nnz, uint8_t flags) {
  return 12 * rows + 4 * nnz + ((flags & kChunkValues) ? 4 * nnz : 0);
}

}  // namespace agld::format
