// The agld store: a memory-mapped, chunked, zstd-compressed, checksummed file of sparse
// labelled rows. docs/format.md is the byte-level contract this header implements.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "agld/file.hpp"
#include "agld/sparse.hpp"
#include "agld/status.hpp"

namespace agld {

inline constexpr uint32_t kFormatVersion = 1;
// The metadata's format_minor: additions a version-1 reader of an older minor reads past
// (docs/format.md). 1: the metadata region may end with the feature statistics. 2: the
// metadata may list the store's complete one-hot fields.
inline constexpr uint32_t kFormatMinor = 2;

// Persistent values: never renumber.
enum class Codec : uint8_t { kNone = 0, kZstd = 1 };
inline constexpr uint8_t kChunkValues = 1;  // the value array is present
inline constexpr uint8_t kChunkDelta = 2;   // indices delta-coded within each row
// With kChunkValues: only values other than 1 are stored, after a bitmap of which they are.
inline constexpr uint8_t kChunkSparseValues = 4;
// The index column is stored byte-transposed (zstd only): byte b of index i at b * nnz + i.
inline constexpr uint8_t kChunkIndexShuffle = 8;
// With kChunkValues (zstd only): the values stored (all, or with kChunkSparseValues those
// other than 1) are u16 codes into a table of the chunk's distinct values before them.
inline constexpr uint8_t kChunkValueDict = 16;
// With kChunkIndexShuffle (zstd only): each byte plane of the index column, and with
// kChunkValueDict of the codes (then byte-transposed too), is stored in the fewest bits
// (0, 1, 2, 4 or 8) that hold its largest byte, after a byte a plane giving that width.
inline constexpr uint8_t kChunkPackedPlanes = 32;
// (zstd only): the labels are u16 codes into a table of the chunk's distinct labels, the
// codes and the row lengths packed columns (as kChunkPackedPlanes packs them).
inline constexpr uint8_t kChunkPackedRows = 64;

struct ChunkInfo {
  uint64_t offset = 0;
  uint64_t first_row = 0;
  uint32_t stored_size = 0;
  uint32_t raw_size = 0;
  uint32_t row_count = 0;
  uint32_t nnz = 0;
  uint32_t crc = 0;
  Codec codec = Codec::kNone;
  uint8_t flags = 0;
};

enum class LabelKind { kBinary, kReal };

struct SourceInfo {
  std::string name;
  std::optional<uint64_t> size;  // absent for stdin
  std::optional<int64_t> mtime;  // seconds since the epoch
};

// The conversion options that shape a store's content, recorded in it.
struct StoreOptions {
  std::string compression = "zstd";
  int level = 1;
  uint64_t chunk_rows = 0;
  uint64_t chunk_bytes = 0;
  std::string index_base = "auto";
  std::optional<uint64_t> features;
  std::string task = "auto";
  bool shuffle = false;
  uint64_t seed = 0;
  double test_fraction = 0;
  std::string part = "all";  // "all", "train" or "test"
  bool skip_bad_lines = false;
  bool raw_literals = false;
};

// A complete one-hot field (ALGORITHMS.md section 8): every row of the store holds exactly
// one feature of [first, first + count), with value 1. Features are 0-based, as rows hold
// them. With an intercept (or a second such field) the likelihood cannot see the field's
// sum direction; the sampler draws that component exactly (docs/samplers.md).
struct FeatureField {
  uint64_t first = 0;
  uint64_t count = 0;
  bool operator==(const FeatureField&) const = default;
};

struct StoreMeta {
  uint32_t format_minor = 0;  // as read (0: written before the key); a writer writes kFormatMinor
  uint64_t rows = 0;
  uint64_t features = 0;
  uint64_t nnz = 0;
  LabelKind label_kind = LabelKind::kReal;
  double label_positive = 1;                                // binary: raw label that is +1
  std::vector<std::pair<double, uint64_t>> label_counts;    // binary: raw label, count
  double label_min = 0, label_max = 0, label_mean = 0;      // real
  double row_sq_norm_max = 0, row_sq_norm_sum = 0;
  uint64_t empty_rows = 0;
  int index_base = 1;
  std::vector<SourceInfo> sources;
  StoreOptions options;
  uint64_t skipped_lines = 0;
  std::string created_by;
  // In increasing order of first, disjoint, inside [0, features) (minor 2; empty: none known).
  std::vector<FeatureField> fields;
};

// Whether the store's rows are in a seeded random order: shuffled at conversion, the
// default of `agld convert` (options.shuffle, with options.seed). False for a store whose
// rows are in their source's order: converted with --keep-order, by an agld that did not
// shuffle by default, or written through StoreWriter with options.shuffle false. Cyclic
// (ca) and block-reshuffle (br) access assume the stored order has no trend; on time-ordered
// or sorted rows kept in order they sample the wrong posterior (docs/readers.md).
bool rows_shuffled(const StoreMeta& meta);

// Words (8 bytes) of memory a decoded chunk holds for chunk c, its row offsets apart: the
// labels, the indices and, unless every value is 1, the values, each array starting on a
// 32-byte boundary.
uint64_t decoded_words(const ChunkInfo& c);
// Bytes of memory a decoded chunk holds for chunk c: decoded_words and the row offsets.
inline uint64_t decoded_bytes(const ChunkInfo& c) {
  return 8 * decoded_words(c) + 4 * (uint64_t{c.row_count} + 1);
}

// One decoded chunk: CSR rows with global row numbers first_row() ... Reused across reads.
class DecodedChunk {
 public:
  uint64_t first_row() const { return first_row_; }
  uint32_t row_count() const { return row_count_; }
  uint64_t nnz() const { return nnz_; }
  std::span<const double> labels() const { return {labels_, row_count_}; }
  std::span<const uint32_t> offsets() const { return offsets_; }  // row_count() + 1
  std::span<const uint32_t> indices() const { return {indices_, nnz_}; }
  // Empty when every value in the chunk is 1.
  std::span<const float> values() const { return {values_, values_ ? nnz_ : 0}; }
  bool has_values() const { return values_ != nullptr; }
  std::span<const uint32_t> row_indices(uint32_t r) const {
    return {indices_ + offsets_[r], offsets_[r + 1] - offsets_[r]};
  }
  // Bytes of memory this chunk holds.
  size_t memory_bytes() const {
    return raw_.capacity() * sizeof(uint64_t) + offsets_.capacity() * sizeof(uint32_t);
  }
  // Memory for any chunk of up to `words` decoded words and `rows` rows: decoding such a
  // chunk into it then allocates nothing. Throws std::bad_alloc.
  void reserve(uint64_t words, uint32_t rows) {
    raw_.reserve(words);
    offsets_.reserve(uint64_t{rows} + 1);
  }
  // Appends the chunk's rows to out (values filled with 1 when absent).
  void append_to(SparseRows* out) const;

 private:
  friend class Store;
  // Cache-line aligned (so are the arrays in raw_: decoded_words()), and grows without
  // zeroing what it adds: decoding writes every element a chunk uses, so the memory is
  // written once. A large allocation's fresh pages are mapped in at once (populate()), not
  // faulted in one by one as the decoding first writes them.
  template <typename T>
  struct Uninitialized {
    using value_type = T;
    static constexpr std::align_val_t kAlign{64};
    Uninitialized() = default;
    template <typename U>
    Uninitialized(const Uninitialized<U>&) noexcept {}
    T* allocate(size_t n) {
      T* p = static_cast<T*>(::operator new(n * sizeof(T), kAlign));
      populate(p, n * sizeof(T));
      return p;
    }
    void deallocate(T* p, size_t) noexcept { ::operator delete(p, kAlign); }
    template <typename U>
    void construct(U* p) noexcept {
      ::new (static_cast<void*>(p)) U;
    }
    template <typename U>
    bool operator==(const Uninitialized<U>&) const noexcept {
      return true;
    }
  };
  // Maps in the pages wholly inside [p, p + bytes) if there are enough of them to be worth a
  // call (MADV_POPULATE_WRITE: without it, a first pass that keeps a 1.8 GB store whole
  // took 374 thousand page faults and 19 % longer, 0.689 s against 0.579); where the kernel
  // cannot, they fault in as used.
  static void populate(void* p, size_t bytes) noexcept;
  std::vector<uint64_t, Uninitialized<uint64_t>> raw_;  // labels, indices, values (decoded_words())
  std::vector<uint32_t, Uninitialized<uint32_t>> offsets_;
  uint64_t first_row_ = 0;
  uint32_t row_count_ = 0;
  uint64_t nnz_ = 0;
  const double* labels_ = nullptr;
  const uint32_t* indices_ = nullptr;
  const float* values_ = nullptr;
};

// Where a store's per-feature statistics are (docs/format.md, "Feature statistics"), as
// Store::open found them; read them with scan_feature_stats (agld/feature_stats.hpp).
struct FeatureStatsSection {
  uint64_t offset = 0;        // of block 0
  uint64_t table_offset = 0;  // of the block table, block_count entries of 16 bytes
  uint64_t features = 0;
  uint32_t block_features = 0, block_count = 0;
  uint32_t table_crc = 0;
  Codec codec = Codec::kZstd;
};

class Store {
 public:
  // Opens and validates a store: footer, metadata, chunk index (docs/format.md). Chunks
  // themselves are checked when they are read.
  static Status open(const std::string& path, std::unique_ptr<Store>* out,
                     FileSystem& fs = FileSystem::local());
  ~Store();

  const std::string& path() const;
  const StoreMeta& meta() const { return meta_; }
  uint64_t file_size() const;
  size_t chunk_count() const { return chunks_.size(); }
  const ChunkInfo& chunk(size_t k) const { return chunks_[k]; }
  // The chunk that holds a row (row < meta().rows).
  size_t chunk_of_row(uint64_t row) const;

  enum class Labels { kMapped, kRaw };
  // Reads chunk k, checks its CRC, decompresses and validates it into *out. With kMapped,
  // binary labels come out as +-1; with kRaw, as written in the source. Thread-safe.
  Status read_chunk(size_t k, DecodedChunk* out, Labels labels = Labels::kMapped) const;
  // As read_chunk, from the chunk's stored bytes read by the caller (stored_size of them).
  Status decode_chunk(size_t k, ByteSpan stored, DecodedChunk* out,
                      Labels labels = Labels::kMapped) const;

  const ReadableFile& file() const { return *file_; }

  // The feature statistics section, if the store has one.
  const std::optional<FeatureStatsSection>& feature_stats_section() const { return stats_; }
  // Checks the footer's CRC of the whole metadata region. open() checks it for a store
  // without feature statistics; with them it checks the JSON text by its own CRC and leaves
  // the section to scan_feature_stats, so that opening reads no statistics (`info --verify`
  // checks this too).
  Status verify_metadata_region() const;

 private:
  Store() = default;
  std::unique_ptr<ReadableFile> file_;
  StoreMeta meta_;
  std::vector<ChunkInfo> chunks_;
  std::optional<FeatureStatsSection> stats_;
  uint64_t meta_offset_ = 0, meta_size_ = 0;
  uint32_t meta_crc_ = 0;
};

struct ChunkCodec {
  Codec codec = Codec::kZstd;
  int level = 1;
  bool delta = false;        // delta-code indices (zstd only; measured to hurt on criteo/kdd12)
  bool index_shuffle = true;  // byte-transpose the index column (zstd only; faster, smaller)
  bool raw_literals = false;  // no Huffman coding of zstd's literals (larger, decodes faster)
  // Values as codes into a per-chunk table where that is smaller (zstd only): faster to
  // decompress (docs/design.md).
  bool value_dict = true;
  // Byte planes packed to the bits they need (with index_shuffle; zstd only): less for zstd
  // to decompress (docs/design.md).
  bool packed_planes = true;
  // Labels as codes into a per-chunk table and row lengths packed, where smaller (zstd only).
  bool packed_rows = true;
};

// A chunk encoded for writing: its stored bytes and index entry (offset, first_row unset).
struct EncodedChunk {
  std::vector<std::byte> bytes;
  ChunkInfo info;
};

// Encodes rows [r0, r1) of rows into a chunk. Thread-safe. Fails only on a codec error or
// a chunk too large for the format's 32-bit sizes.
Status encode_chunk(const SparseRows& rows, size_t r0, size_t r1, const ChunkCodec& codec,
                    EncodedChunk* out);

// Fills the statistics of features first .. first + n - 1 for StoreWriter to record: the rows
// where each is stored, the sum of its squared values and its largest |value| (0 for a
// feature in no row).
using FeatureStatsFill = std::function<void(uint64_t first, uint64_t n, uint64_t* count,
                                            double* sum_sq, float* max_abs)>;
// Features a block of the statistics section holds (its raw size: 20 bytes a feature).
inline constexpr uint32_t kFeatureStatsBlockFeatures = 65536;

// Writes a store: chunks in row order, then finish() with the metadata. Nothing appears at
// the path unless finish() succeeds.
class StoreWriter {
 public:
  static Status create(const std::string& path, std::unique_ptr<StoreWriter>* out,
                       FileSystem& fs = FileSystem::local());
  ~StoreWriter();
  Status add_chunk(const EncodedChunk& chunk);
  uint64_t rows() const { return rows_; }
  uint64_t nnz() const { return nnz_; }
  uint64_t bytes_written() const;
  // Records per-feature statistics in the store (docs/format.md, "Feature statistics"):
  // finish() calls fill for blocks of block_features features in order, 0 .. meta.features
  // - 1, and writes each as it comes. Without it the store has none (readers compute them).
  void record_feature_stats(FeatureStatsFill fill,
                            uint32_t block_features = kFeatureStatsBlockFeatures) {
    stats_fill_ = std::move(fill);
    stats_block_ = block_features;
  }
  // Writes metadata, index and footer, then commits. meta.rows and meta.nnz are filled in
  // from the chunks written.
  Status finish(StoreMeta meta);
  // Writes the index and footer but does not commit: the caller commits via commit().
  // Lets a conversion with two outputs publish both only when both are complete.
  Status finish_uncommitted(StoreMeta meta);
  Status commit();

 private:
  StoreWriter() = default;
  std::unique_ptr<WritableFile> file_;
  std::vector<ChunkInfo> chunks_;
  uint64_t rows_ = 0;
  uint64_t nnz_ = 0;
  uint64_t offset_ = 0;
  bool finished_ = false;
  FeatureStatsFill stats_fill_;
  uint32_t stats_block_ = kFeatureStatsBlockFeatures;
};

}  // namespace agld
