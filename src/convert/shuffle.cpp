#include "convert/shuffle.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "common/huge_array.hpp"
#include "common/mix.hpp"

namespace agld {
namespace {

constexpr size_t kWriteBytes = 1 << 20;         // a run is written 1 MiB at a time
constexpr uint64_t kPunchBytes = 16 << 20;      // what a run has read is released in steps of this
constexpr uint64_t kMinReadBuffer = 256 << 10;  // a run's read buffer while merging, at least
constexpr size_t kMaxFanIn = 128;               // runs merged at once, at most (descriptors)
constexpr size_t kMaxBlockBytes = 32 << 20;

// Appends one run record: [u64 key][f64 label][u32 nnz][u32 idx x nnz][f32 val x nnz].
void put_record(std::vector<char>* out, uint64_t key, double label, const uint32_t* idx,
                const float* val, uint32_t nnz) {
  const size_t at = out->size();
  out->resize(at + 20 + 8 * size_t{nnz});
  char* p = out->data() + at;
  std::memcpy(p, &key, 8);
  std::memcpy(p + 8, &label, 8);
  std::memcpy(p + 16, &nnz, 4);
  if (nnz > 0) {  // an empty row's idx and val may be an empty vector's null data()
    std::memcpy(p + 20, idx, 4 * size_t{nnz});
    std::memcpy(p + 20 + 4 * size_t{nnz}, val, 4 * size_t{nnz});
  }
}

}  // namespace

// A sorted run in an anonymous temporary file (a ScratchFile), written once and then read
// from the front.
struct ExternalShuffler::Run {
  std::unique_ptr<ScratchFile> file;
  int level = 0;          // 0: spilled from memory; L + 1: merged from runs of level L
  uint64_t size = 0;      // bytes written
  uint64_t read_pos = 0;  // file offset of buf[0]
  uint64_t punched = 0;   // bytes [0, punched) released to the file system
  bool can_punch = true;
  std::vector<char> buf;
  size_t pos = 0, len = 0;
  // The record at the head, decoded.
  uint64_t key = 0;
  double label = 0;
  std::vector<uint32_t> idx;
  std::vector<float> val;
  // The shuffler's count of bytes on disk, and its peak.
  uint64_t* disk = nullptr;
  uint64_t* peak = nullptr;

  ~Run() {
    if (disk) *disk -= size - punched;
  }

  Status write_all(const char* p, size_t n) {
    if (n == 0) return Status::ok();
    AGLD_RETURN_IF_ERROR(file->append(ByteSpan(reinterpret_cast<const std::byte*>(p), n)));
    size += n;
    *disk += n;
    *peak = std::max(*peak, *disk);
    return Status::ok();
  }

  // Releases the bytes before offset `upto` (rounded down to a page) to the file system:
  // they will not be read again. Where holes cannot be punched, the file keeps them.
  void release(uint64_t upto) {
    upto &= ~uint64_t{4095};
    if (!can_punch || upto <= punched) return;
    if (!file->discard(punched, upto - punched)) {
      can_punch = false;
      return;
    }
    *disk -= upto - punched;
    punched = upto;
  }

  // Ensures n bytes are buffered at pos; false at the end of the run.
  Status fill(size_t n, bool* ok) {
    if (len - pos >= n) {
      *ok = true;
      return Status::ok();
    }
    std::memmove(buf.data(), buf.data() + pos, len - pos);
    read_pos += pos;
    len -= pos;
    pos = 0;
    if (read_pos - punched >= kPunchBytes) release(read_pos);
    if (buf.size() < n) buf.resize(n);
    while (len < n && read_pos + len < size) {
      size_t got = 0;
      const Status st = file->pread(read_pos + len, buf.data() + len, buf.size() - len, &got);
      if (!st.is_ok() || got == 0) {
        return Status::io_error(std::string("shuffle: reading a temporary run failed: ") +
                                (!st.is_ok() ? st.message() : "unexpected end of file"));
      }
      len += got;
    }
    *ok = len >= n;
    return Status::ok();
  }

  // Decodes the next record into the head fields; *ok false at the end.
  Status advance(bool* ok) {
    AGLD_RETURN_IF_ERROR(fill(20, ok));
    if (!*ok) return Status::ok();
    uint32_t nnz;
    std::memcpy(&key, buf.data() + pos, 8);
    std::memcpy(&label, buf.data() + pos + 8, 8);
    std::memcpy(&nnz, buf.data() + pos + 16, 4);
    AGLD_RETURN_IF_ERROR(fill(20 + 8 * size_t{nnz}, ok));
    if (!*ok) return Status::internal("shuffle: truncated run record");
    const char* p = buf.data() + pos + 20;
    idx.resize(nnz);
    val.resize(nnz);
    if (nnz > 0) {  // empty vectors' data() may be null, and memcpy from or to null undefined
      std::memcpy(idx.data(), p, 4 * size_t{nnz});
      std::memcpy(val.data(), p + 4 * size_t{nnz}, 4 * size_t{nnz});
    }
    pos += 20 + 8 * size_t{nnz};
    return Status::ok();
  }
};

namespace {
// A quarter of the buffer, at most kMaxBlockBytes, in whole huge pages when it has some.
size_t block_size(uint64_t budget) {
  const uint64_t b = std::min<uint64_t>(budget / 4, kMaxBlockBytes);
  return b >= kHugePageBytes ? b & ~uint64_t{kHugePageBytes - 1} : std::max<uint64_t>(b, 4096);
}
}  // namespace

void ExternalShuffler::BlockFree::operator()(char* p) const noexcept {
  ::operator delete (p, std::align_val_t{kHugePageBytes});
}

ExternalShuffler::ExternalShuffler(uint64_t seed, uint64_t memory, std::string temp_dir,
                                   FileSystem& fs)
    : fs_(fs),
      seed_(mix64(seed ^ 0x53485546464C45ull)),
      limit_(memory),
      // Half for the buffer, half for the read buffers of a merge while it is kept.
      budget_(memory / 2),
      block_bytes_(block_size(budget_)),
      // Half the memory is for the merge's read buffers, at least kMinReadBuffer each.
      fan_in_(std::clamp<uint64_t>(memory / (2 * kMinReadBuffer), 8, kMaxFanIn)),
      temp_dir_(temp_dir.empty() ? std::string(".") : std::move(temp_dir)) {}

ExternalShuffler::~ExternalShuffler() = default;

bool ExternalShuffler::fits(size_t bytes) const {
  uint64_t need = block_total_;
  size_t b = block_, used = block_used_;
  while (b < blocks_.size() && used + bytes > blocks_[b].size) ++b, used = 0;
  if (b == blocks_.size()) need += std::max(bytes, block_bytes_);  // a new block
  const size_t slots = slots_.size() < slots_.capacity()
                           ? slots_.capacity()
                           : std::max<size_t>(1024, 2 * slots_.capacity());
  return need + sizeof(Slot) * slots <= budget_;
}

char* ExternalShuffler::place(size_t bytes) {
  while (block_ < blocks_.size() && block_used_ + bytes > blocks_[block_].size) {
    ++block_;
    block_used_ = 0;
  }
  if (block_ == blocks_.size()) {
    Block b;
    b.size = std::max(bytes, block_bytes_);
    b.data.reset(static_cast<char*>(::operator new (b.size, std::align_val_t{kHugePageBytes})));
    // Huge pages where the kernel has them (transparent_hugepage "madvise"): one fault
    // and one TLB entry for 2 MiB of records rather than 512, which a row copied out in
    // random order feels. Nothing changes where it has none.
    if (b.size >= kHugePageBytes) ::madvise(b.data.get(), b.size & ~(kHugePageBytes - 1), MADV_HUGEPAGE);
    block_total_ += b.size;
    blocks_.push_back(std::move(b));
  }
  char* p = blocks_[block_].data.get() + block_used_;
  block_used_ += bytes;
  return p;
}

Status ExternalShuffler::add(const SparseRows& src, size_t r, uint64_t global_row) {
  const uint64_t b = src.offsets[r];
  const uint32_t nnz = static_cast<uint32_t>(src.offsets[r + 1] - b);
  const size_t bytes = 12 + 8 * size_t{nnz};
  if (!slots_.empty() && !fits(bytes)) AGLD_RETURN_IF_ERROR(spill());
  char* p = place(bytes);
  std::memcpy(p, &src.labels[r], 8);
  std::memcpy(p + 8, &nnz, 4);
  if (nnz > 0) {  // a block of empty rows only may have null arrays
    std::memcpy(p + 12, src.indices.data() + b, 4 * size_t{nnz});
    std::memcpy(p + 12 + 4 * size_t{nnz}, src.values.data() + b, 4 * size_t{nnz});
  }
  // fmix64 and mix64 are bijections: distinct rows get distinct keys.
  slots_.push_back({mix64(seed_ ^ mix64(global_row)), p});
  return Status::ok();
}

void ExternalShuffler::sort_slots() {
  std::sort(slots_.begin(), slots_.end(),
            [](const Slot& a, const Slot& b) { return a.key < b.key; });
}

void ExternalShuffler::free_buffer() {
  blocks_.clear();
  block_total_ = 0;
  block_ = block_used_ = 0;
  std::vector<Slot>().swap(slots_);
  emitted_ = 0;
}

// An anonymous file in the temporary directory (FileSystem::create_scratch: on the local
// file system O_TMPFILE, which never has a name, else a name unlinked at once).
Status ExternalShuffler::new_run(std::unique_ptr<Run>* out) {
  auto run = std::make_unique<Run>();
  const Status st = fs_.create_scratch(temp_dir_, &run->file);
  if (!st.is_ok()) {
    return Status::io_error("shuffle: cannot create a temporary run in " + temp_dir_ + ": " +
                            st.message() + " (--temp-dir puts them elsewhere)");
  }
  run->disk = &disk_;
  run->peak = &peak_disk_;
  *out = std::move(run);
  return Status::ok();
}

Status ExternalShuffler::spill() {
  sort_slots();
  std::unique_ptr<Run> run;
  AGLD_RETURN_IF_ERROR(new_run(&run));
  std::vector<char> out;
  out.reserve(kWriteBytes + 4096);
  auto write = [&]() -> Status {
    Status st = run->write_all(out.data(), out.size());
    out.clear();
    if (st.is_ok()) return st;
    return Status::io_error("shuffle: writing a temporary run in " + temp_dir_ +
                            " failed: " + st.message() + " (--temp-dir puts them elsewhere)");
  };
  for (const Slot& slot : slots_) {
    uint32_t nnz;
    std::memcpy(&nnz, slot.record + 8, 4);
    const size_t at = out.size();
    out.resize(at + 20 + 8 * size_t{nnz});
    std::memcpy(out.data() + at, &slot.key, 8);
    std::memcpy(out.data() + at + 8, slot.record, 12 + 8 * size_t{nnz});
    if (out.size() >= kWriteBytes) AGLD_RETURN_IF_ERROR(write());
  }
  AGLD_RETURN_IF_ERROR(write());
  runs_.push_back(std::move(run));
  ++spilled_;
  // The blocks and slots are filled again from the start; a record larger than a block
  // does not keep its block.
  slots_.clear();
  block_ = block_used_ = 0;
  std::erase_if(blocks_, [&](const Block& b) {
    if (b.size == block_bytes_) return false;
    block_total_ -= b.size;
    return true;
  });
  // fan_in_ runs of one level at the end become one run of the next level.
  while (runs_.size() >= fan_in_) {
    const size_t first = runs_.size() - fan_in_;
    const int level = runs_.back()->level;
    if (runs_[first]->level != level) break;  // levels do not increase towards the end
    AGLD_RETURN_IF_ERROR(merge_tail(first, level + 1));
  }
  return Status::ok();
}

Status ExternalShuffler::start_merge(size_t first, Heap* heap) {
  const size_t n = runs_.size() - first;
  const size_t per_run = std::clamp<uint64_t>(limit_ / (2 * n), 64 << 10, 8 << 20);
  for (size_t k = first; k < runs_.size(); ++k) {
    runs_[k]->buf.resize(per_run);
    bool ok;
    AGLD_RETURN_IF_ERROR(runs_[k]->advance(&ok));
    if (ok) heap->push({runs_[k]->key, k});
  }
  return Status::ok();
}

Status ExternalShuffler::merge_tail(size_t first, int level) {
  std::unique_ptr<Run> merged;
  AGLD_RETURN_IF_ERROR(new_run(&merged));
  merged->level = level;
  Heap heap;
  AGLD_RETURN_IF_ERROR(start_merge(first, &heap));
  std::vector<char> out;
  out.reserve(kWriteBytes + 4096);
  auto write = [&]() -> Status {
    Status st = merged->write_all(out.data(), out.size());
    out.clear();
    if (st.is_ok()) return st;
    return Status::io_error("shuffle: merging temporary runs in " + temp_dir_ +
                            " failed: " + st.message() + " (--temp-dir puts them elsewhere)");
  };
  while (!heap.empty()) {
    const size_t k = heap.top().run;
    heap.pop();
    Run& run = *runs_[k];
    put_record(&out, run.key, run.label, run.idx.data(), run.val.data(),
               static_cast<uint32_t>(run.idx.size()));
    if (out.size() >= kWriteBytes) AGLD_RETURN_IF_ERROR(write());
    bool ok;
    AGLD_RETURN_IF_ERROR(run.advance(&ok));
    if (ok) heap.push({run.key, k});
  }
  AGLD_RETURN_IF_ERROR(write());
  runs_.resize(first);  // closes the merged runs: their space is freed
  runs_.push_back(std::move(merged));
  ++merges_;
  return Status::ok();
}

Status ExternalShuffler::finish() {
  finished_ = true;
  if (runs_.empty()) {
    sort_slots();
    return Status::ok();
  }
  if (!slots_.empty()) AGLD_RETURN_IF_ERROR(spill());
  free_buffer();  // the memory is the merge's now
  // Merge the last runs until fan_in_ are left for the final merge.
  while (runs_.size() > fan_in_) {
    const size_t take = std::min(fan_in_, runs_.size() - fan_in_ + 1);
    AGLD_RETURN_IF_ERROR(merge_tail(runs_.size() - take, runs_[runs_.size() - take]->level + 1));
  }
  return start_merge(0, &heap_);
}

Status ExternalShuffler::next(SparseRows* out, uint64_t max_rows, uint64_t max_bytes, bool* done) {
  if (!finished_) return Status::internal("shuffle: next() before finish()");
  uint64_t rows = 0, bytes = 0;
  auto full = [&](uint64_t row_nnz) {
    return rows > 0 && (rows >= max_rows || bytes + 12 + 8 * row_nnz > max_bytes);
  };
  if (runs_.empty()) {
    while (emitted_ < slots_.size()) {
      const char* p = slots_[emitted_].record;
      uint32_t nnz;
      std::memcpy(&nnz, p + 8, 4);
      if (full(nnz)) break;
      double label;
      std::memcpy(&label, p, 8);
      out->labels.push_back(label);
      const size_t at = out->indices.size();
      out->indices.resize(at + nnz);
      out->values.resize(at + nnz);
      if (nnz > 0) {  // an empty row into empty arrays: data() may be null, memcpy's undefined
        std::memcpy(out->indices.data() + at, p + 12, 4 * size_t{nnz});
        std::memcpy(out->values.data() + at, p + 12 + 4 * size_t{nnz}, 4 * size_t{nnz});
      }
      out->offsets.push_back(out->indices.size());
      ++rows;
      bytes += 12 + 8 * nnz;
      ++emitted_;
    }
    *done = emitted_ == slots_.size();
    if (*done) free_buffer();
    return Status::ok();
  }
  while (!heap_.empty()) {
    const size_t k = heap_.top().run;
    Run& run = *runs_[k];
    if (full(run.idx.size())) break;
    heap_.pop();
    out->add_row(run.label, run.idx, run.val);
    ++rows;
    bytes += 12 + 8 * run.idx.size();
    bool ok;
    AGLD_RETURN_IF_ERROR(run.advance(&ok));
    if (ok) heap_.push({run.key, k});
  }
  *done = heap_.empty();
  if (*done) runs_.clear();  // every row is out: free the disk now
  return Status::ok();
}

}  // namespace agld
