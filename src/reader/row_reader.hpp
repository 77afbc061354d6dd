// Direct rows: one row of a codec-none chunk read from the file on its own, without reading
// its chunk. Internal to the reader layer; docs/readers.md says when the reader uses it.
//
// A codec-none chunk is stored raw (docs/format.md): labels f64[rows], row lengths
// u32[rows], indices u32[nnz], then values (none; f32[nnz]; or a bitmap of the values that
// are not 1 followed by those values). The row lengths (and the bitmap) locate every row:
// their prefix sums, with the bitmap and a count of stored values every kMarkRows rows, form
// the chunk's row index (8.8 bytes a row on criteo-shaped data, against ~200 for the chunk).
// With it, a row costs its label, its indices and its values: three small reads.
//
// What is checked: the row index (the row lengths add up to the chunk's nonzeros, the
// bitmap names as many values as are stored), and every row read (a finite label, indices
// increasing and below the number of features, finite values), so that no offset used is
// ever outside the chunk and bad bytes are reported, never a crash. What is not: the
// chunk's CRC, which covers the whole chunk, so a flipped byte that leaves a row valid (a
// label, a value, an index that stays increasing) goes unnoticed. Reading whole chunks
// (every other path, and agld info --verify) checks the CRC.
#pragma once

#include <cstdint>
#include <vector>

#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld::reader {

// One chunk's row index.
struct RowIndex {
  static constexpr uint32_t kMarkRows = 16;
  std::vector<uint32_t> offsets;  // row_count + 1: the first entry of each row
  std::vector<uint64_t> bitmap;   // sparse values: bit p set when value p is stored
  std::vector<uint32_t> marks;    // sparse values: values stored before row kMarkRows j
  uint64_t bytes() const {
    return 4 * offsets.capacity() + 8 * bitmap.capacity() + 4 * marks.capacity() + sizeof(RowIndex);
  }
};

// Where one row's bytes are, and which of its values are stored.
struct RowSpan {
  uint64_t label_at = 0;
  uint64_t indices_at = 0;
  uint32_t nnz = 0;
  enum class Values { kNone, kDense, kSparse } values = Values::kNone;
  uint64_t values_at = 0;
  uint32_t stored = 0;          // values stored: dense nnz, sparse the bitmap's count
  std::vector<uint32_t> where;  // sparse: positions in the row of the stored values
};

// Rows read on their own, in CSR form, values filled in (1 where none is stored).
struct DirectRows {
  std::vector<uint64_t> ids;
  std::vector<double> labels;
  std::vector<uint32_t> offsets{0};
  std::vector<uint32_t> indices;
  std::vector<float> values;

  size_t size() const { return ids.size(); }
  size_t nnz() const { return indices.size(); }
  void clear() {
    ids.clear();
    labels.clear();
    offsets.assign(1, 0);
    indices.clear();
    values.clear();
  }
  void reserve(size_t rows, size_t nnz) {
    ids.reserve(rows);
    labels.reserve(rows);
    offsets.reserve(rows + 1);
    indices.reserve(nnz);
    values.reserve(nnz);
  }
  // Lets go of the memory (after a row longer than the usual capacity).
  void release() { *this = DirectRows(); }
  uint64_t bytes() const {
    return 8 * (ids.capacity() + labels.capacity()) +
           4 * (offsets.capacity() + indices.capacity() + values.capacity());
  }
};

class RowReader {
 public:
  explicit RowReader(const Store& store);

  // Whether every chunk of the store can be read a row at a time (codec none).
  static bool possible(const Store& store);
  // Bytes of the file a row index is read from, at most, over the store's chunks.
  static uint64_t max_index_read_bytes(const Store& store);
  // Memory of a row index, at most, over the store's chunks.
  static uint64_t max_index_bytes(const Store& store);

  // Asks the kernel for the pages chunk k's row index is read from; returns their bytes.
  uint64_t ask_index(size_t k) const;
  // ask_index(k)'s bytes, without asking.
  uint64_t ask_bytes_of_index(size_t k) const;
  // Drops those pages (asked for, then not needed).
  void drop_index(size_t k) const;
  // Reads and checks chunk k's row index; adds the bytes read (whole pages) to *bytes_read.
  Status read_index(size_t k, RowIndex* out, uint64_t* bytes_read) const;
  // Where row r of chunk k is, from its chunk's row index.
  void locate(size_t k, uint32_t r, const RowIndex& index, RowSpan* out) const;
  // Asks the kernel for the row's pages; returns their bytes (whole pages).
  uint64_t ask(const RowSpan& span) const;
  // Reads, checks and appends the row, then drops its pages; adds the bytes read (whole
  // pages) to *bytes_read. On failure *out is left as it was.
  Status read(size_t k, uint32_t r, const RowSpan& span, DirectRows* out,
              uint64_t* bytes_read) const;

 private:
  Status corrupt(size_t k, const std::string& why) const;
  struct IndexParts {
    uint64_t lengths_at, lengths_bytes, bitmap_at, bitmap_bytes;  // bitmap_bytes 0: none
  };
  IndexParts index_parts(size_t k) const;
  uint64_t pages(uint64_t offset,
                 uint64_t n) const;              // bytes of the pages [offset, offset + n) touches
  void drop(uint64_t offset, uint64_t n) const;  // drops those pages

  const Store& store_;
  const ReadableFile& file_;
  const uint64_t page_;
};

}  // namespace agld::reader
