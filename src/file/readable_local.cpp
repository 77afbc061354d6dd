// The local FileSystem's readable files: a file memory-mapped whole (views in place), with
// a descriptor for page-cache hints and buffered reads, and one opened O_DIRECT for reads
// that keep no page (read_uncached).
#include "file/readable_local.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/iostreams/device/mapped_file.hpp>
#include <cerrno>
#include <cstring>
#include <string>

#include "file/mapping_guard.hpp"

namespace agld {
namespace {

class MappedReadableFile final : public ReadableFile {
 public:
  MappedReadableFile(std::string path, uint64_t size) : path_(std::move(path)), size_(size) {}
  ~MappedReadableFile() override {
    mapping_guard::remove(guard_);  // before the mapping goes (map_'s destructor)
    if (fd_ >= 0) ::close(fd_);
    if (direct_fd_ >= 0) ::close(direct_fd_);
  }

  Status map() {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);  // page-cache hints, buffered reads
    // For read_uncached; file systems without O_DIRECT (tmpfs) refuse it: then reads are
    // buffered, and their pages dropped.
    direct_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    struct stat st;
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0) mtime_ = st.st_mtim;
    if (size_ == 0) return Status::ok();  // nothing to map; every non-empty view fails
    try {
      map_.open(path_);
    } catch (const std::exception& e) {
      return Status::io_error(path_ + ": cannot memory-map: " + e.what());
    }
    if (!map_.is_open() || map_.size() != size_) {
      return Status::io_error(path_ + ": cannot memory-map (size changed while opening)");
    }
    guard_ = mapping_guard::add(map_.data(), map_.size());
    return Status::ok();
  }

  Status check_unchanged() const override {
    if (mapping_guard::faulted(guard_)) {
      return Status::corruption(path_ + ": the file changed while it was being read: a read of its " +
                                std::to_string(size_) + " bytes fell past its end (it was truncated)");
    }
    struct stat st;
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) return Status::ok();
    if (static_cast<uint64_t>(st.st_size) != size_) {
      return Status::corruption(path_ + ": the file changed while it was being read: " + std::to_string(size_) +
                                " bytes when opened, " + std::to_string(st.st_size) + " now");
    }
    if (st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec) {
      return Status::corruption(path_ + ": the file changed while it was being read: it was written to " +
                                "(its modification time is not the one it had when opened)");
    }
    return Status::ok();
  }

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }

  Status view(uint64_t offset, size_t n, ByteSpan* out) const override {
    AGLD_RETURN_IF_ERROR(in_file(offset, n));
    if (n == 0) {
      *out = ByteSpan();
      return Status::ok();
    }
    *out = ByteSpan(reinterpret_cast<const std::byte*>(map_.data()) + offset, n);
    return Status::ok();
  }

  Status read_uncached(uint64_t offset, size_t n, ReadBuffer* buf, ByteSpan* out) const override {
    AGLD_RETURN_IF_ERROR(in_file(offset, n));
    if (n == 0) {
      *out = ByteSpan();
      return Status::ok();
    }
    if (fd_ < 0) return ReadableFile::read_uncached(offset, n, buf, out);
    const bool direct = direct_fd_ >= 0 && direct_ok_.load(std::memory_order_relaxed);
    // O_DIRECT reads whole aligned blocks: the range widened to them (the last may pass
    // the end of the file, where the read stops).
    const uint64_t a = ReadBuffer::kAlign;
    const uint64_t begin = direct ? offset / a * a : offset;
    const uint64_t end = direct ? (offset + n + a - 1) / a * a : offset + n;
    const uint64_t need = offset + n - begin;
    std::byte* dst = buf->reserve(static_cast<size_t>(end - begin));
    uint64_t got = 0;
    while (got < need) {
      const ssize_t r = ::pread(direct ? direct_fd_ : fd_, dst + got,
                                static_cast<size_t>(end - begin - got), static_cast<off_t>(begin + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && direct && errno == EINVAL && got == 0) {
        // O_DIRECT accepted at open but not for this read (an alignment the device wants
        // larger than 4 KiB): read through the page cache from now on.
        direct_ok_.store(false, std::memory_order_relaxed);
        return read_uncached(offset, n, buf, out);
      }
      if (r < 0) {
        return Status::io_error(path_ + ": read of " + std::to_string(n) + " bytes at offset " +
                                std::to_string(offset) + ": " + std::strerror(errno));
      }
      // Short of what is needed: the file shrank after it was opened (an O_DIRECT read can
      // only go on from a block boundary).
      if (r == 0 || (direct && (got + static_cast<uint64_t>(r)) % a != 0 &&
                     got + static_cast<uint64_t>(r) < need)) {
        return Status::corruption(path_ + ": read of " + std::to_string(n) + " bytes at offset " +
                                  std::to_string(offset) + " came back short; the file was " +
                                  "truncated while open");
      }
      got += static_cast<uint64_t>(r);
    }
    if (!direct) {
      posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_DONTNEED);
    }
    *out = ByteSpan(dst + (offset - begin), n);
    return Status::ok();
  }

  void drop_cache(uint64_t offset, size_t n) const override {
    if (size_ == 0 || offset >= size_) return;
    const long page = sysconf(_SC_PAGESIZE);
    uint64_t begin = offset / page * page;
    uint64_t end = std::min<uint64_t>(size_, offset + n);
    madvise(const_cast<char*>(map_.data()) + begin, end - begin, MADV_DONTNEED);
    if (fd_ >= 0) {
      posix_fadvise(fd_, static_cast<off_t>(begin), static_cast<off_t>(end - begin),
                    POSIX_FADV_DONTNEED);
    }
  }

  void advise_random() const override {
    if (size_ == 0) return;
    madvise(const_cast<char*>(map_.data()), size_, MADV_RANDOM);
    if (fd_ >= 0) posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM);
  }

  void will_need(uint64_t offset, size_t n) const override {
    if (fd_ >= 0 && offset < size_) {
      posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(std::min<uint64_t>(n, size_ - offset)),
                    POSIX_FADV_WILLNEED);
    }
  }

 private:
  Status in_file(uint64_t offset, size_t n) const {
    if (offset > size_ || n > size_ - offset) {
      return Status::corruption(path_ + ": read of " + std::to_string(n) + " bytes at offset " +
                                std::to_string(offset) + " is past the end of the file (" +
                                std::to_string(size_) + " bytes); the file is truncated");
    }
    return Status::ok();
  }

  std::string path_;
  uint64_t size_;
  int fd_ = -1;
  int direct_fd_ = -1;
  mutable std::atomic<bool> direct_ok_{true};
  timespec mtime_{};  // when opened
  int guard_ = -1;    // the mapping's slot in mapping_guard
  boost::iostreams::mapped_file_source map_;
};

}  // namespace

Status open_local_readable(const std::string& path, std::unique_ptr<ReadableFile>* out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) return Status::not_found(path + ": no such file");
    return Status::io_error(path + ": " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) return Status::invalid_argument(path + ": is a directory");
  if (::access(path.c_str(), R_OK) != 0) {
    return Status::io_error(path + ": " + std::strerror(errno));
  }
  auto file = std::make_unique<MappedReadableFile>(path, static_cast<uint64_t>(st.st_size));
  AGLD_RETURN_IF_ERROR(file->map());
  *out = std::move(file);
  return Status::ok();
}

}  // namespace agld
