// Writing a store: the header, chunks as they come, then the metadata (with the feature
// statistics, when recorded), the chunk index and the footer; nothing at the path until the
// file is committed (FileSystem::create_atomic).
#include "agld/store.hpp"

#include <span>

#include "store/crc32c.hpp"
#include "store/feature_stats_format.hpp"
#include "store/format.hpp"

namespace agld {

using format::kFooterSize;
using format::kHeaderSize;
using format::kIndexEntrySize;

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
