#include "convert/shuffle.hpp"

#include "common/mix.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>

namespace agld {

// A sorted run on disk: records [u64 key][f64 label][u32 nnz][u32 idx x nnz][f32 val x nnz].
struct ExternalShuffler::Run {
  int fd = -1;
  uint64_t size = 0;      // bytes written
  uint64_t read_pos = 0;  // file offset of buf[0]
  std::vector<char> buf;
  size_t pos = 0, len = 0;
  // The record at the head, decoded.
  uint64_t key = 0;
  double label = 0;
  std::vector<uint32_t> idx;
  std::vector<float> val;

  ~Run() {
    if (fd >= 0) ::close(fd);
  }

  Status write_all(const char* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Status::io_error(std::string("shuffle: writing a run failed: ") + std::strerror(errno));
      p += w;
      n -= static_cast<size_t>(w);
      size += static_cast<uint64_t>(w);
    }
    return Status::ok();
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
    if (buf.size() < n) buf.resize(n);
    while (len < n && read_pos + len < size) {
      ssize_t r = ::pread(fd, buf.data() + len, buf.size() - len, static_cast<off_t>(read_pos + len));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return Status::io_error(std::string("shuffle: reading a run failed: ") + std::strerror(errno));
      len += static_cast<size_t>(r);
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
    std::memcpy(idx.data(), p, 4 * size_t{nnz});
    std::memcpy(val.data(), p + 4 * size_t{nnz}, 4 * size_t{nnz});
    pos += 20 + 8 * size_t{nnz};
    return Status::ok();
  }
};

ExternalShuffler::ExternalShuffler(uint64_t seed, uint64_t memory, std::string temp_dir)
    : seed_(mix64(seed ^ 0x53485546464C45ull)), limit_(memory), temp_dir_(std::move(temp_dir)) {}

ExternalShuffler::~ExternalShuffler() = default;

uint64_t ExternalShuffler::buffer_bytes() const {
  return buf_.labels.capacity() * 8 + buf_.offsets.capacity() * 8 + buf_.indices.capacity() * 4 +
         buf_.values.capacity() * 4 + keys_.capacity() * 8 + order_.capacity() * 4;
}

Status ExternalShuffler::add(const SparseRows& src, size_t r, uint64_t global_row) {
  // Spill before a buffer may double past the limit (growth briefly holds old + new).
  if (buffer_bytes() * 3 > limit_ && buf_.rows() > 0) AGLD_RETURN_IF_ERROR(spill());
  buf_.append(src, r, r + 1);
  keys_.push_back(mix64(seed_ ^ mix64(global_row)));
  return Status::ok();
}

void ExternalShuffler::sort_buffer() {
  order_.resize(buf_.rows());
  std::iota(order_.begin(), order_.end(), 0u);
  // Ties (probability ~ n^2 / 2^64) keep input order: deterministic.
  std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) { return keys_[a] < keys_[b]; });
}

Status ExternalShuffler::spill() {
  sort_buffer();
  auto run = std::make_unique<Run>();
  std::string tmpl = (temp_dir_.empty() ? std::string(".") : temp_dir_) + "/.agld-shuffle-XXXXXX";
  run->fd = ::mkstemp(tmpl.data());
  if (run->fd < 0) {
    return Status::io_error("shuffle: cannot create a temporary run in " + temp_dir_ + ": " +
                            std::strerror(errno));
  }
  ::unlink(tmpl.c_str());  // anonymous from now on: it vanishes with the process
  std::vector<char> out;
  out.reserve(1 << 20);
  for (uint32_t r : order_) {
    const uint32_t nnz = static_cast<uint32_t>(buf_.offsets[r + 1] - buf_.offsets[r]);
    const size_t at = out.size();
    out.resize(at + 20 + 8 * size_t{nnz});
    char* p = out.data() + at;
    std::memcpy(p, &keys_[r], 8);
    std::memcpy(p + 8, &buf_.labels[r], 8);
    std::memcpy(p + 16, &nnz, 4);
    std::memcpy(p + 20, buf_.indices.data() + buf_.offsets[r], 4 * size_t{nnz});
    std::memcpy(p + 20 + 4 * size_t{nnz}, buf_.values.data() + buf_.offsets[r], 4 * size_t{nnz});
    if (out.size() >= (1 << 20)) {
      AGLD_RETURN_IF_ERROR(run->write_all(out.data(), out.size()));
      out.clear();
    }
  }
  AGLD_RETURN_IF_ERROR(run->write_all(out.data(), out.size()));
  runs_.push_back(std::move(run));
  // Release the buffers entirely so that the next run starts from nothing.
  buf_ = SparseRows();
  std::vector<uint64_t>().swap(keys_);
  std::vector<uint32_t>().swap(order_);
  return Status::ok();
}

Status ExternalShuffler::finish() {
  finished_ = true;
  if (runs_.empty()) {
    sort_buffer();
    return Status::ok();
  }
  if (buf_.rows() > 0) AGLD_RETURN_IF_ERROR(spill());
  const size_t per_run = std::clamp<uint64_t>(limit_ / (2 * runs_.size()), 64 << 10, 8 << 20);
  for (size_t k = 0; k < runs_.size(); ++k) {
    runs_[k]->buf.resize(per_run);
    bool ok;
    AGLD_RETURN_IF_ERROR(runs_[k]->advance(&ok));
    if (ok) heap_.push({runs_[k]->key, k});
  }
  return Status::ok();
}

Status ExternalShuffler::next(SparseRows* out, uint64_t max_rows, uint64_t max_bytes, bool* done) {
  if (!finished_) return Status::internal("shuffle: next() before finish()");
  uint64_t rows = 0, bytes = 0;
  auto full = [&](uint64_t row_nnz) {
    return rows > 0 && (rows >= max_rows || bytes + 12 + 8 * row_nnz > max_bytes);
  };
  if (runs_.empty()) {
    while (emitted_ < order_.size()) {
      uint32_t r = order_[emitted_];
      uint64_t nnz = buf_.offsets[r + 1] - buf_.offsets[r];
      if (full(nnz)) break;
      out->append(buf_, r, r + 1);
      ++rows;
      bytes += 12 + 8 * nnz;
      ++emitted_;
    }
    *done = emitted_ == order_.size();
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
  return Status::ok();
}

}  // namespace agld
