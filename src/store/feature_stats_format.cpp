#include "store/feature_stats_format.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "store/crc32c.hpp"
#include "store/format.hpp"
#include "store/zstd_ctx.hpp"

namespace agld::format {
namespace {

using store_detail::ZstdCCtx;
using store_detail::ZstdDCtx;

// Byte b of element i of n elements of `width` bytes goes to b n + i, and back.
void transpose(const std::byte* src, unsigned width, uint64_t n, std::byte* dst) {
  for (unsigned b = 0; b < width; ++b) {
    std::byte* plane = dst + b * n;
    for (uint64_t i = 0; i < n; ++i) plane[i] = src[width * i + b];
  }
}
void untranspose(const std::byte* src, unsigned width, uint64_t n, std::byte* dst) {
  for (unsigned b = 0; b < width; ++b) {
    const std::byte* plane = src + b * n;
    for (uint64_t i = 0; i < n; ++i) dst[width * i + b] = plane[i];
  }
}

}  // namespace

bool has_stats_magic(const std::byte* in) { return get<uint64_t>(in + 56) == kStatsMagic; }

void encode_stats_trailer(const StatsTrailer& t, std::byte* out) {
  std::memset(out, 0, kStatsTrailerSize);
  put<uint64_t>(out + 0, t.json_size);
  put<uint64_t>(out + 8, t.features);
  put<uint32_t>(out + 16, t.block_features);
  put<uint32_t>(out + 20, t.block_count);
  put<uint32_t>(out + 24, t.json_crc);
  put<uint32_t>(out + 28, t.table_crc);
  put<uint8_t>(out + 32, t.codec);
  put<uint32_t>(out + 48, t.version);
  put<uint32_t>(out + 52, crc32c::value(out, 52));
  put<uint64_t>(out + 56, kStatsMagic);
}

Status decode_stats_trailer(const std::byte* in, StatsTrailer* t) {
  if (get<uint64_t>(in + 56) != kStatsMagic) {
    return Status::corruption("feature statistics trailer: bad magic");
  }
  if (get<uint32_t>(in + 52) != crc32c::value(in, 52)) {
    return Status::corruption("feature statistics trailer: checksum mismatch");
  }
  t->json_size = get<uint64_t>(in + 0);
  t->features = get<uint64_t>(in + 8);
  t->block_features = get<uint32_t>(in + 16);
  t->block_count = get<uint32_t>(in + 20);
  t->json_crc = get<uint32_t>(in + 24);
  t->table_crc = get<uint32_t>(in + 28);
  t->codec = get<uint8_t>(in + 32);
  t->version = get<uint32_t>(in + 48);
  if (t->version == kStatsVersion) {
    bool zero = get<uint64_t>(in + 40) == 0;
    for (int k = 33; k < 40; ++k) zero = zero && in[k] == std::byte{0};
    if (!zero) return Status::corruption("feature statistics trailer: reserved bytes are not zero");
  }
  return Status::ok();
}

void encode_stats_entry(const StatsEntry& e, std::byte* out) {
  put<uint64_t>(out + 0, e.offset);
  put<uint32_t>(out + 8, e.stored_size);
  put<uint32_t>(out + 12, e.crc);
}

StatsEntry decode_stats_entry(const std::byte* in) {
  return {get<uint64_t>(in + 0), get<uint32_t>(in + 8), get<uint32_t>(in + 12)};
}

uint64_t encode_stats_block(const uint64_t* count, const double* sum_sq, const float* max_abs,
                            uint64_t n, std::vector<std::byte>* scratch, std::byte* raw) {
  transpose(reinterpret_cast<const std::byte*>(count), 8, n, raw);
  // The sums and largest values of the features counted, gathered, then transposed.
  scratch->resize(kStatsRawBytesPerFeature * n);
  std::byte* sums = scratch->data();
  std::byte* maxes = sums + 8 * n;
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (count[i] == 0) continue;
    std::memcpy(sums + 8 * k, sum_sq + i, 8);
    std::memcpy(maxes + 4 * k, max_abs + i, 4);
    ++k;
  }
  transpose(sums, 8, k, raw + 8 * n);
  transpose(maxes, 4, k, raw + 8 * n + 8 * k);
  return stats_raw_size(n, k);
}

std::string decode_stats_block(const std::byte* raw, uint64_t raw_size, uint64_t n,
                               std::vector<std::byte>* scratch, uint64_t* count, double* sum_sq,
                               float* max_abs) {
  untranspose(raw, 8, n, reinterpret_cast<std::byte*>(count));
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; ++i) k += count[i] != 0;
  if (stats_raw_size(n, k) != raw_size) {
    return std::to_string(k) + " features counted, but room for the sums of " +
           std::to_string((raw_size - 8 * n) / 12);
  }
  scratch->resize(12 * k);
  std::byte* sums = scratch->data();
  std::byte* maxes = sums + 8 * k;
  untranspose(raw + 8 * n, 8, k, sums);
  untranspose(raw + 8 * n + 8 * k, 4, k, maxes);
  uint64_t at = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (count[i] == 0) {
      sum_sq[i] = 0;
      max_abs[i] = 0;
      continue;
    }
    std::memcpy(sum_sq + i, sums + 8 * at, 8);
    std::memcpy(max_abs + i, maxes + 4 * at, 4);
    ++at;
  }
  return {};
}

std::string unpack_stats_block(ByteSpan stored, Codec codec, uint64_t n,
                               std::vector<std::byte>* raw) {
  // Room for the counts and a whole number of the counted features' sums and maxima.
  auto possible = [n](uint64_t size) {
    return size >= 8 * n && size <= kStatsRawBytesPerFeature * n && (size - 8 * n) % 12 == 0;
  };
  if (codec == Codec::kNone) {
    if (!possible(stored.size())) {
      return "stored size " + std::to_string(stored.size()) + " is not possible for " +
             std::to_string(n) + " features";
    }
    raw->assign(stored.begin(), stored.end());
    return {};
  }
  // The frame's declared size first: nothing is allocated for what a damaged block claims.
  const unsigned long long declared = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) return "zstd: not a zstd frame";
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN || !possible(declared)) {
    return "zstd frame holds " +
           (declared == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("an unknown number of")
                                                 : std::to_string(declared)) +
           " bytes, not possible for " + std::to_string(n) + " features";
  }
  const uint64_t raw_size = declared;
  raw->resize(raw_size);
  thread_local ZstdDCtx dctx;
  const size_t got =
      ZSTD_decompressDCtx(dctx.ctx, raw->data(), raw_size, stored.data(), stored.size());
  if (ZSTD_isError(got)) return std::string("zstd: ") + ZSTD_getErrorName(got);
  if (got != raw_size) return "decompressed to the wrong size";
  return {};
}

Status append_stats_section(WritableFile* file, const FeatureStatsFill& fill, uint64_t features,
                            uint32_t block_features, Codec codec, int level,
                            uint64_t section_offset, uint64_t json_size, uint32_t json_crc,
                            uint32_t* crc, uint64_t* bytes) {
  if (block_features == 0)
    return Status::invalid_argument("feature statistics: blocks of 0 features");
  const uint64_t blocks = stats_block_count(features, block_features);
  if (blocks > std::numeric_limits<uint32_t>::max()) {
    return Status::invalid_argument("feature statistics: more than 2^32 - 1 blocks");
  }
  const uint64_t per = std::min<uint64_t>(block_features, features);
  std::vector<uint64_t> count(per);
  std::vector<double> sum_sq(per);
  std::vector<float> max_abs(per);
  std::vector<std::byte> raw(kStatsRawBytesPerFeature * per), scratch;
  std::vector<std::byte> packed(codec == Codec::kZstd ? ZSTD_compressBound(raw.size()) : 0);
  ZstdCCtx cctx;
  auto append = [&](ByteSpan b) -> Status {
    AGLD_RETURN_IF_ERROR(file->append(b));
    *crc = crc32c::extend(*crc, b.data(), b.size());
    *bytes += b.size();
    return Status::ok();
  };
  std::vector<std::byte> table(kStatsEntrySize * blocks);
  uint64_t at = section_offset;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t first = b * block_features;
    const uint64_t n = std::min<uint64_t>(block_features, features - first);
    fill(first, n, count.data(), sum_sq.data(), max_abs.data());
    ByteSpan stored(raw.data(), encode_stats_block(count.data(), sum_sq.data(), max_abs.data(), n,
                                                   &scratch, raw.data()));
    if (codec == Codec::kZstd) {
      const size_t m = ZSTD_compressCCtx(cctx.ctx, packed.data(), packed.size(), raw.data(),
                                         stored.size(), level);
      if (ZSTD_isError(m)) return Status::internal(std::string("zstd: ") + ZSTD_getErrorName(m));
      stored = ByteSpan(packed.data(), m);
    }
    if (stored.size() > std::numeric_limits<uint32_t>::max()) {
      return Status::invalid_argument("feature statistics: a block of more than 4 GiB");
    }
    const StatsEntry e{at, static_cast<uint32_t>(stored.size()),
                       crc32c::value(stored.data(), stored.size())};
    encode_stats_entry(e, table.data() + kStatsEntrySize * b);
    AGLD_RETURN_IF_ERROR(append(stored));
    at += stored.size();
  }
  AGLD_RETURN_IF_ERROR(append(table));
  StatsTrailer t;
  t.json_size = json_size;
  t.features = features;
  t.block_features = block_features;
  t.block_count = static_cast<uint32_t>(blocks);
  t.json_crc = json_crc;
  t.table_crc = crc32c::value(table.data(), table.size());
  t.codec = static_cast<uint8_t>(codec);
  std::byte trailer[kStatsTrailerSize];
  encode_stats_trailer(t, trailer);
  return append(trailer);
}

}  // namespace agld::format
