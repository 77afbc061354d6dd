// Fuzz target: opening and reading a store, as `agld info --verify` does (Store::open, every
// chunk read and decoded, the metadata region's CRC, the feature statistics scanned).
// Input: a mode byte, then
//   mode & 1 == 0: a whole store file. Unless mode & 2, its CRCs (footer, metadata, index,
//                  chunks, feature statistics table, blocks and trailer) are first set to
//                  match its bytes, so that the mutations reach the decoders behind them;
//   mode & 1 == 1: a chunk: 8 bytes of shape (flags, codec, rows, nnz, d, binary labels), then
//                  its raw bytes, which are compressed (codec zstd) and written as the one
//                  chunk of a store through StoreWriter: the decoders of every flag, directly.
// Files live in memory (fuzz::MemoryFileSystem). Every chunk that decodes must pass the
// format's checks (fuzz::check_decoded); none may crash, hang or read out of bounds.
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "agld/feature_stats.hpp"
#include "agld/store.hpp"
#include "fuzz_support.hpp"
#include "store/crc32c.hpp"
#include "store/feature_stats_format.hpp"
#include "store/format.hpp"

namespace agld {
namespace {

using format::get;
using format::put;

void put_crc(std::vector<std::byte>& f, uint64_t at, uint64_t from, uint64_t n) {
  put<uint32_t>(f.data() + at, crc32c::value(f.data() + from, n));
}

// Sets every CRC of a store to match its bytes, where the layout lets it be found.
void fix_crcs(std::vector<std::byte>& f) {
  const uint64_t size = f.size();
  if (size < format::kHeaderSize + format::kFooterSize) return;
  const uint64_t footer = size - format::kFooterSize;
  const uint64_t meta_offset = get<uint64_t>(f.data() + footer);
  const uint64_t meta_size = get<uint64_t>(f.data() + footer + 8);
  const uint64_t index_offset = get<uint64_t>(f.data() + footer + 16);
  const uint64_t chunks = get<uint64_t>(f.data() + footer + 24);
  const bool layout = meta_offset <= footer && meta_size <= footer - meta_offset &&
                      index_offset == meta_offset + meta_size &&
                      chunks <= (footer - index_offset) / format::kIndexEntrySize;
  if (layout) {
    for (uint64_t k = 0; k < chunks; ++k) {
      const uint64_t e = index_offset + k * format::kIndexEntrySize;
      const uint64_t off = get<uint64_t>(f.data() + e), n = get<uint32_t>(f.data() + e + 16);
      if (off <= size && n <= size - off) put_crc(f, e + 32, off, n);
    }
    const uint64_t t = index_offset - format::kStatsTrailerSize;
    if (meta_size >= format::kStatsTrailerSize + 1 && format::has_stats_magic(f.data() + t)) {
      const uint64_t json = get<uint64_t>(f.data() + t);
      const uint64_t blocks = get<uint32_t>(f.data() + t + 20);
      const uint64_t table = t - std::min<uint64_t>(t, blocks * format::kStatsEntrySize);
      if (table >= meta_offset) {
        for (uint64_t b = 0; b < blocks; ++b) {
          const uint64_t e = table + b * format::kStatsEntrySize;
          const uint64_t off = get<uint64_t>(f.data() + e), n = get<uint32_t>(f.data() + e + 8);
          if (off <= size && n <= size - off) put_crc(f, e + 12, off, n);
        }
        put_crc(f, t + 28, table, t - table);
      }
      if (json <= meta_size) put_crc(f, t + 24, meta_offset, json);
      put_crc(f, t + 52, t, 52);
    }
    put_crc(f, footer + 32, meta_offset, meta_size);
    put_crc(f, footer + 36, index_offset, chunks * format::kIndexEntrySize);
  }
  put_crc(f, footer + 52, footer, 52);
}

// A store of one chunk whose raw bytes and shape come from the input.
bool chunk_store(const uint8_t* d, size_t n, fuzz::MemoryFileSystem* fs) {
  if (n < 8) return false;
  EncodedChunk ec;
  ChunkInfo& c = ec.info;
  c.flags = d[0] & format::kKnownFlags;
  c.codec = (d[1] & 1) ? Codec::kZstd : Codec::kNone;
  c.row_count = 1 + uint32_t{d[2]} + (static_cast<uint32_t>(d[3] & 1) << 8);
  c.nnz = uint32_t{d[4]} | static_cast<uint32_t>(d[5] & 3) << 8;
  StoreMeta meta;
  meta.features = 1 + (uint64_t{d[6]} << (d[7] & 7));
  meta.label_kind = (d[7] & 8) ? LabelKind::kBinary : LabelKind::kReal;
  meta.label_positive = 1;
  const std::byte* raw = reinterpret_cast<const std::byte*>(d + 8);
  c.raw_size = static_cast<uint32_t>(n - 8);
  if (c.codec == Codec::kZstd) {
    ec.bytes.resize(ZSTD_compressBound(c.raw_size));
    const size_t z = ZSTD_compress(ec.bytes.data(), ec.bytes.size(), raw, c.raw_size, 1);
    if (ZSTD_isError(z)) return false;
    ec.bytes.resize(z);
  } else {
    ec.bytes.assign(raw, raw + c.raw_size);
  }
  c.stored_size = static_cast<uint32_t>(ec.bytes.size());
  c.crc = crc32c::value(ec.bytes.data(), ec.bytes.size());
  std::unique_ptr<StoreWriter> w;
  if (!StoreWriter::create("store", &w, *fs).is_ok()) return false;
  return w->add_chunk(ec).is_ok() && w->finish(meta).is_ok();
}

void read_store(fuzz::MemoryFileSystem& fs) {
  std::unique_ptr<Store> store;
  if (!Store::open("store", &store, fs).is_ok()) return;
  const StoreMeta& m = store->meta();
  DecodedChunk chunk;
  for (size_t k = 0; k < store->chunk_count(); ++k) {
    for (Store::Labels labels : {Store::Labels::kMapped, Store::Labels::kRaw}) {
      if (!store->read_chunk(k, &chunk, labels).is_ok()) break;
      fuzz::check_decoded(chunk, m.features,
                          labels == Store::Labels::kMapped && m.label_kind == LabelKind::kBinary);
      AGLD_FUZZ_CHECK(chunk.row_count() == store->chunk(k).row_count && chunk.nnz() == store->chunk(k).nnz,
                      "the chunk's shape is its index entry's");
    }
  }
  (void)store->verify_metadata_region();
  // Computing the statistics of a store without them takes 16 bytes a feature, as it must
  // for a real store of that many features: only for small d here.
  if (has_feature_stats(*store) || m.features <= (uint64_t{1} << 20)) {
    uint64_t next = 0;
    (void)scan_feature_stats(
        *store,
        [&](const FeatureStatsBlock& b) {
          AGLD_FUZZ_CHECK(b.first == next && b.count.size() == b.sum_sq.size() && b.count.size() == b.max_sq.size(),
                          "blocks in order");
          next += b.count.size();
          return Status::ok();
        },
        nullptr, 4096);
  }
}

}  // namespace
}  // namespace agld

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agld;
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  fuzz::MemoryFileSystem fs;
  if (mode & 1) {
    if (!chunk_store(data + 1, size - 1, &fs)) return 0;
  } else {
    std::vector<std::byte> file(reinterpret_cast<const std::byte*>(data + 1),
                                reinterpret_cast<const std::byte*>(data + size));
    if (!(mode & 2)) fix_crcs(file);
    fs.put("store", ByteSpan(file.data(), file.size()));
  }
  read_store(fs);
  return 0;
}
