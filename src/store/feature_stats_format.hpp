// Byte-level encoding of the feature statistics section (docs/format.md, "Feature
// statistics"): at the end of the metadata region, after the JSON text and a NUL, blocks of
// per-feature statistics, their table and a trailer. Internal to the store layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld::format {

inline constexpr uint64_t kStatsMagic = 0x31545346444C4741ull;  // "AGLDFST1"
inline constexpr size_t kStatsTrailerSize = 64;
inline constexpr size_t kStatsEntrySize = 16;
inline constexpr uint32_t kStatsVersion = 1;
// A raw block holds at most a u64 count, an f64 sum of squares and an f32 largest |x| a feature.
inline constexpr uint64_t kStatsRawBytesPerFeature = 20;

struct StatsTrailer {
  uint64_t json_size = 0;
  uint64_t features = 0;
  uint32_t block_features = 0, block_count = 0;
  uint32_t json_crc = 0, table_crc = 0;
  uint8_t codec = 0;
  uint32_t version = kStatsVersion;
};

// Whether the 64 bytes at `in` end with the trailer's magic (the region may hold a section).
bool has_stats_magic(const std::byte* in);
void encode_stats_trailer(const StatsTrailer& t, std::byte* out);  // kStatsTrailerSize bytes
// Checks the trailer's CRC and, for version kStatsVersion, that its reserved bytes are 0.
// A later version's trailer keeps json_size, json_crc, version and its CRC in place, so a
// reader still finds the JSON text through it.
Status decode_stats_trailer(const std::byte* in, StatsTrailer* t);

struct StatsEntry {
  uint64_t offset = 0;
  uint32_t stored_size = 0;
  uint32_t crc = 0;
};
void encode_stats_entry(const StatsEntry& e, std::byte* out);
StatsEntry decode_stats_entry(const std::byte* in);

// Blocks needed for d features of block_features each.
inline uint64_t stats_block_count(uint64_t features, uint64_t block_features) {
  return (features + block_features - 1) / block_features;
}

// A raw block of n features of which k are counted (count > 0): their counts, u64 [n]; the
// sums of squares of the k, f64 [k]; their largest |x|, f32 [k]; each column byte-transposed.
inline uint64_t stats_raw_size(uint64_t n, uint64_t k) { return 8 * n + 12 * k; }
// Writes it at raw (room for kStatsRawBytesPerFeature n bytes); returns its size.
uint64_t encode_stats_block(const uint64_t* count, const double* sum_sq, const float* max_abs,
                            uint64_t n, std::vector<std::byte>* scratch, std::byte* raw);
// Reads it back (0 for a feature not counted): empty, or what is wrong (a size that does not
// match the counts).
std::string decode_stats_block(const std::byte* raw, uint64_t raw_size, uint64_t n,
                               std::vector<std::byte>* scratch, uint64_t* count, double* sum_sq,
                               float* max_abs);

// Turns a block's stored bytes (CRC already checked) into its raw bytes (n features) in
// *raw, after checking the size it claims: empty, or what is wrong.
std::string unpack_stats_block(ByteSpan stored, Codec codec, uint64_t n,
                               std::vector<std::byte>* raw);

// Writes a section to file after the metadata's JSON text (json_size bytes, CRC json_crc) and
// its NUL, which the caller has written: the blocks (offsets from section_offset), their
// table and the trailer. *crc is extended over every byte written and *bytes counts them.
Status append_stats_section(WritableFile* file, const FeatureStatsFill& fill, uint64_t features,
                            uint32_t block_features, Codec codec, int level,
                            uint64_t section_offset, uint64_t json_size, uint32_t json_crc,
                            uint32_t* crc, uint64_t* bytes);

}  // namespace agld::format
