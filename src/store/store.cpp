// Opening a store (docs/format.md): the footer and header, the metadata region (the JSON
// text, and where the feature statistics are), and the chunk index, each checked before the
// next is read; and what an open store answers. Chunks are read and decoded in
// chunk_decode.cpp, encoded in chunk_encode.cpp, and written by store_writer.cpp.
#include "agld/store.hpp"

#include <algorithm>
#include <string>

#include "store/crc32c.hpp"
#include "store/feature_stats_format.hpp"
#include "store/format.hpp"

namespace agld {

using format::get;
using format::kFooterSize;
using format::kHeaderSize;
using format::kIndexEntrySize;

namespace {

// A store that is not what it claims: "PATH: why".
Status corrupt(const std::string& path, const std::string& why) {
  return Status::corruption(why).with_context(path);
}

// The footer, checked against the header and the file: its magic, version and layout (every
// region inside the file, in order, without overflow).
Status read_footer(const ReadableFile& f, const std::string& path, format::Footer* ft) {
  const uint64_t size = f.size();
  if (size < kHeaderSize + kFooterSize) {
    ByteSpan head;
    if (size < 8 || (f.view(0, 8, &head).is_ok() && get<uint64_t>(head.data()) != format::kMagic)) {
      return corrupt(path,
                     "not an agld store (no store magic; " + std::to_string(size) + " bytes)");
    }
    return corrupt(
        path, "file is " + std::to_string(size) + " bytes, too short to be a store (truncated?)");
  }
  ByteSpan header, footer_bytes;
  AGLD_RETURN_IF_ERROR(f.view(0, kHeaderSize, &header));
  AGLD_RETURN_IF_ERROR(f.view(size - kFooterSize, kFooterSize, &footer_bytes));
  const bool header_magic = get<uint64_t>(header.data()) == format::kMagic;
  if (!header_magic && get<uint64_t>(footer_bytes.data() + 56) != format::kMagic) {
    return corrupt(path, "not an agld store (no store magic)");
  }
  Status st = format::decode_footer(footer_bytes.data(), get<uint32_t>(header.data() + 8), ft);
  if (!st.is_ok()) {
    if (header_magic && st.code() == Status::Code::kCorruption &&
        get<uint64_t>(footer_bytes.data() + 56) != format::kMagic) {
      return corrupt(path, "truncated or corrupt: no footer at the end of the file (" +
                               std::to_string(size) + " bytes)");
    }
    return st.with_context(path);
  }
  if (!header_magic) return corrupt(path, "header: bad magic");
  if (get<uint32_t>(header.data() + 8) != kFormatVersion) {
    return corrupt(path, "header: format version disagrees with the footer");
  }
  if (get<uint32_t>(header.data() + 12) != 0) {
    return corrupt(path, "header: reserved bytes are not zero");
  }
  const uint64_t footer_at = size - kFooterSize;
  if (ft->chunk_count > (footer_at - kHeaderSize) / kIndexEntrySize ||
      ft->index_offset != footer_at - ft->chunk_count * kIndexEntrySize ||
      ft->meta_offset < kHeaderSize || ft->meta_offset > ft->index_offset ||
      ft->meta_size != ft->index_offset - ft->meta_offset) {
    return corrupt(path, "footer: inconsistent layout (metadata at " +
                             std::to_string(ft->meta_offset) + ", index at " +
                             std::to_string(ft->index_offset) + ", " +
                             std::to_string(ft->chunk_count) + " chunks, file " +
                             std::to_string(size) + " bytes)");
  }
  return Status::ok();
}

// The metadata region: the JSON text alone, or (docs/format.md, "Feature statistics") the
// text, a NUL and the feature statistics, whose trailer ends the region and holds the text's
// own CRC. Then only the text is read at open, not the statistics.
struct MetaRegion {
  bool with_stats = false;
  format::StatsTrailer trailer;  // with_stats
  uint64_t json_size = 0;
};

// Where the JSON text ends: the region, or what the statistics trailer says.
Status locate_json(const ReadableFile& f, const std::string& path, const format::Footer& ft,
                   MetaRegion* r) {
  ByteSpan trailer_bytes;
  const bool has_trailer = ft.meta_size >= format::kStatsTrailerSize + 1;
  if (has_trailer) {
    AGLD_RETURN_IF_ERROR(f.view(ft.index_offset - format::kStatsTrailerSize,
                                format::kStatsTrailerSize, &trailer_bytes));
  }
  r->json_size = ft.meta_size;
  r->with_stats = has_trailer && format::has_stats_magic(trailer_bytes.data());
  if (!r->with_stats) return Status::ok();
  const Status st = format::decode_stats_trailer(trailer_bytes.data(), &r->trailer);
  if (!st.is_ok()) return corrupt(path, "metadata: " + st.message());
  if (r->trailer.json_size > ft.meta_size - format::kStatsTrailerSize - 1) {
    return corrupt(path, "metadata: feature statistics trailer: the JSON text's size " +
                             std::to_string(r->trailer.json_size) + " is past the region");
  }
  r->json_size = r->trailer.json_size;
  return Status::ok();
}

// The JSON text and the chunk index, each checked by its CRC, and the metadata decoded;
// *index_bytes views the index.
Status read_metadata(const ReadableFile& f, const std::string& path, const format::Footer& ft,
                     const MetaRegion& r, StoreMeta* meta, ByteSpan* index_bytes) {
  ByteSpan meta_bytes;
  AGLD_RETURN_IF_ERROR(
      f.view(ft.meta_offset, r.with_stats ? r.json_size + 1 : ft.meta_size, &meta_bytes));
  AGLD_RETURN_IF_ERROR(f.view(ft.index_offset, ft.chunk_count * kIndexEntrySize, index_bytes));
  const uint32_t meta_crc = r.with_stats ? r.trailer.json_crc : ft.meta_crc;
  if (crc32c::value(meta_bytes.data(), r.json_size) != meta_crc) {
    return corrupt(path, "metadata: checksum mismatch");
  }
  if (r.with_stats && meta_bytes[r.json_size] != std::byte{0}) {
    return corrupt(path, "metadata: no NUL after the JSON text");
  }
  if (crc32c::value(index_bytes->data(), index_bytes->size()) != ft.index_crc) {
    return corrupt(path, "chunk index: checksum mismatch");
  }
  const Status st = format::decode_meta(
      std::string(reinterpret_cast<const char*>(meta_bytes.data()), r.json_size), meta);
  return st.with_context(path);
}

// The feature statistics section's layout, from the trailer (of a version this build reads):
// blocks from after the NUL to the table, which ends at the trailer. Blocks and table are
// checked when they are read.
Status stats_section(const std::string& path, const format::Footer& ft, const MetaRegion& r,
                     const StoreMeta& m, std::optional<FeatureStatsSection>* out) {
  if (!r.with_stats || r.trailer.version != format::kStatsVersion) return Status::ok();
  const format::StatsTrailer& trailer = r.trailer;
  FeatureStatsSection sec;
  sec.offset = ft.meta_offset + r.json_size + 1;
  sec.features = trailer.features;
  sec.block_features = trailer.block_features;
  sec.block_count = trailer.block_count;
  sec.table_crc = trailer.table_crc;
  sec.codec = static_cast<Codec>(trailer.codec);
  const uint64_t table_bytes = uint64_t{trailer.block_count} * format::kStatsEntrySize;
  const uint64_t room = ft.meta_size - format::kStatsTrailerSize - (r.json_size + 1);
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
  if (!why.empty()) return corrupt(path, "metadata: feature statistics trailer: " + why);
  sec.table_offset = ft.index_offset - format::kStatsTrailerSize - table_bytes;
  *out = sec;
  return Status::ok();
}

// What is wrong with chunk index entry c (its bytes at entry), the chunks before it ending at
// expect_offset and expect_row; empty if nothing.
std::string index_entry_fault(const ChunkInfo& c, const std::byte* entry, uint64_t expect_offset,
                              uint64_t expect_row, uint64_t meta_offset) {
  if (get<uint16_t>(entry + 38) != 0) return "reserved bytes are not zero";
  if (c.offset != expect_offset) {
    return "offset " + std::to_string(c.offset) + ", expected " + std::to_string(expect_offset);
  }
  if (c.stored_size > meta_offset - c.offset) return "extends past the chunk area";
  if (c.first_row != expect_row) {
    return "first row " + std::to_string(c.first_row) + ", expected " + std::to_string(expect_row);
  }
  if (c.row_count == 0) return "no rows";
  if (c.codec != Codec::kNone && c.codec != Codec::kZstd) {
    return "unknown codec " + std::to_string(static_cast<int>(c.codec));
  }
  if ((c.flags & ~format::kKnownFlags) != 0) return "unknown flags " + std::to_string(c.flags);
  if (!format::raw_size_valid(c.row_count, c.nnz, c.flags, c.raw_size)) {
    return "raw size " + std::to_string(c.raw_size) + " does not match its shape";
  }
  if (c.codec == Codec::kNone && c.stored_size != c.raw_size) {
    return "uncompressed but stored size differs from raw size";
  }
  if (c.codec == Codec::kNone && (c.flags & kChunkValueDict)) {
    return "a value table in an uncompressed chunk";  // rows are read in place from those
  }
  if ((c.flags & kChunkPackedPlanes) &&
      (c.codec == Codec::kNone || !(c.flags & kChunkIndexShuffle))) {
    return "packed planes without a compressed, byte-transposed index column";
  }
  if (c.codec == Codec::kNone && (c.flags & kChunkPackedRows)) {
    return "packed rows in an uncompressed chunk";
  }
  return {};
}

// The chunk index: every entry sound, the chunks back to back from the header to the
// metadata, and holding the rows and nonzeros the metadata says.
Status read_chunk_index(const std::string& path, const format::Footer& ft, ByteSpan index_bytes,
                        const StoreMeta& m, std::vector<ChunkInfo>* chunks) {
  chunks->resize(ft.chunk_count);
  uint64_t expect_offset = kHeaderSize, expect_row = 0, nnz = 0;
  for (size_t k = 0; k < ft.chunk_count; ++k) {
    const std::byte* entry = index_bytes.data() + k * kIndexEntrySize;
    const ChunkInfo c = format::decode_index_entry(entry);
    const std::string why = index_entry_fault(c, entry, expect_offset, expect_row, ft.meta_offset);
    if (!why.empty()) return corrupt(path, "chunk index entry " + std::to_string(k) + ": " + why);
    (*chunks)[k] = c;
    expect_offset += c.stored_size;
    expect_row += c.row_count;
    nnz += c.nnz;
  }
  if (expect_offset != ft.meta_offset) {
    return corrupt(path, "chunk index: chunks end at " + std::to_string(expect_offset) +
                             " but metadata starts at " + std::to_string(ft.meta_offset));
  }
  if (expect_row != m.rows || nnz != m.nnz) {
    return corrupt(path, "chunk index: chunks hold " + std::to_string(expect_row) + " rows and " +
                             std::to_string(nnz) + " nonzeros, metadata says " +
                             std::to_string(m.rows) + " and " + std::to_string(m.nnz));
  }
  return Status::ok();
}

}  // namespace

Status Store::open(const std::string& path, std::unique_ptr<Store>* out, FileSystem& fs) {
  std::unique_ptr<Store> s(new Store());
  AGLD_RETURN_IF_ERROR(fs.open_readable(path, &s->file_));
  const ReadableFile& f = *s->file_;
  format::Footer ft;
  AGLD_RETURN_IF_ERROR(read_footer(f, path, &ft));
  s->meta_offset_ = ft.meta_offset;
  s->meta_size_ = ft.meta_size;
  s->meta_crc_ = ft.meta_crc;
  MetaRegion region;
  AGLD_RETURN_IF_ERROR(locate_json(f, path, ft, &region));
  ByteSpan index_bytes;
  AGLD_RETURN_IF_ERROR(read_metadata(f, path, ft, region, &s->meta_, &index_bytes));
  AGLD_RETURN_IF_ERROR(stats_section(path, ft, region, s->meta_, &s->stats_));
  if (s->meta_.features > (uint64_t{1} << 32)) {
    return corrupt(path, "metadata: features " + std::to_string(s->meta_.features) +
                             " exceeds the format's 32-bit indices");
  }
  AGLD_RETURN_IF_ERROR(read_chunk_index(path, ft, index_bytes, s->meta_, &s->chunks_));
  *out = std::move(s);
  return Status::ok();
}

Store::~Store() = default;

const std::string& Store::path() const { return file_->path(); }
uint64_t Store::file_size() const { return file_->size(); }

size_t Store::chunk_of_row(uint64_t row) const {
  auto it = std::upper_bound(chunks_.begin(), chunks_.end(), row,
                             [](uint64_t r, const ChunkInfo& c) { return r < c.first_row; });
  return static_cast<size_t>(it - chunks_.begin()) - 1;
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

bool rows_shuffled(const StoreMeta& meta) { return meta.options.shuffle; }

}  // namespace agld
