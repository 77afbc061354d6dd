// The local FileSystem: Boost.Iostreams memory maps for reading (guarded against the file
// shrinking under them: mapping_guard.hpp); inputs read with read(2); for writing, an unnamed
// O_TMPFILE in the target's directory that is linked into place only on commit, so that a
// failed or killed writer leaves nothing behind.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/iostreams/device/mapped_file.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "agld/file.hpp"
#include "file/input_local.hpp"
#include "file/mapping_guard.hpp"

namespace agld {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

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
                                std::to_string(offset) + ": " + errno_text(errno));
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

std::atomic<uint64_t> g_tmp_counter{0};

// Named temporaries in flight, for remove_pending_temporaries(): fixed slots and no
// allocation, so that a signal handler can walk them. A slot is 0 free, 1 being filled,
// 2 holding a path to remove.
constexpr int kPendingSlots = 64;
struct PendingSlot {
  std::atomic<int> state{0};
  char path[4096];
};
PendingSlot g_pending[kPendingSlots];

int register_pending(const std::string& path) {
  if (path.size() >= sizeof g_pending[0].path) return -1;
  for (int i = 0; i < kPendingSlots; ++i) {
    int expected = 0;
    if (g_pending[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_pending[i].path, path.c_str(), path.size() + 1);
      g_pending[i].state.store(2);
      return i;
    }
  }
  return -1;  // more than 64 outputs at once: those are not removed on a signal
}

void unregister_pending(int slot) {
  if (slot >= 0) g_pending[slot].state.store(0);
}

class AtomicWritableFile final : public WritableFile {
 public:
  explicit AtomicWritableFile(std::string path) : path_(std::move(path)) {}
  ~AtomicWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !named_tmp_.empty()) ::unlink(named_tmp_.c_str());
    unregister_pending(pending_slot_);
  }

  Status open() {
    std::filesystem::path target(path_);
    dir_ = target.parent_path().empty() ? std::string(".") : target.parent_path().string();
    struct stat st;
    if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return Status::invalid_argument(path_ + ": is a directory");
    }
    fd_ = ::open(dir_.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd_ < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
      // The file system has no O_TMPFILE: use a named temporary removed on failure (and,
      // through the pending registry, by the CLI's signal handler).
      named_tmp_ = temp_name();
      pending_slot_ = register_pending(named_tmp_);
      fd_ = ::open(named_tmp_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    }
    if (fd_ < 0) {
      int err = errno;
      named_tmp_.clear();
      return Status::io_error(path_ + ": cannot create output in " + dir_ + ": " +
                              errno_text(err));
    }
    return Status::ok();
  }

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }

  Status append(ByteSpan data) override {
    if (fd_ < 0) return Status::io_error(path_ + ": write after close");
    auto p = reinterpret_cast<const char*>(data.data());
    size_t left = data.size();
    while (left > 0) {
      ssize_t w = ::write(fd_, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        return Status::io_error(path_ + ": write failed: " + errno_text(errno));
      }
      p += w;
      left -= static_cast<size_t>(w);
      size_ += static_cast<uint64_t>(w);
    }
    return Status::ok();
  }

  Status commit() override {
    if (fd_ < 0) return Status::io_error(path_ + ": commit after close");
    if (::fsync(fd_) != 0) return Status::io_error(path_ + ": fsync failed: " + errno_text(errno));
    std::string tmp = named_tmp_;
    if (tmp.empty()) {
      // A new file is linked at its name directly: one atomic step, which leaves no name
      // behind whenever the process dies (kill -9 included).
      int err = link_to(path_);
      if (err == 0) return committed();
      if (err != EEXIST) {
        return Status::io_error(path_ + ": cannot link the output into place: " + errno_text(err));
      }
      // It replaces a file: linked under a temporary name for an instant, then renamed over
      // the target (Linux has no link that replaces). The name is registered so that a
      // signal in between does not leave it behind (SIGKILL in those microseconds does).
      tmp = temp_name();
      pending_slot_ = register_pending(tmp);
      err = link_to(tmp);
      if (err != 0) {
        unregister_pending(pending_slot_);
        pending_slot_ = -1;
        return Status::io_error(path_ + ": cannot link the output into place: " + errno_text(err));
      }
    }
    if (::rename(tmp.c_str(), path_.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return Status::io_error(path_ + ": cannot rename the output into place: " +
                              errno_text(err));
    }
    return committed();
  }

 private:
  // Links the unnamed file at name: 0, or the errno (EEXIST if name exists).
  int link_to(const std::string& name) const {
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
    const int err = errno;
    if (err == EEXIST) return err;
    // Without /proc: by the descriptor (which needs CAP_DAC_READ_SEARCH).
    if (::linkat(fd_, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH) == 0) return 0;
    return errno == EEXIST ? EEXIST : err;
  }

  // The file is at its name: closes it and syncs the directory.
  Status committed() {
    committed_ = true;
    unregister_pending(pending_slot_);  // after the rename: the name is gone either way
    pending_slot_ = -1;
    ::close(fd_);
    fd_ = -1;
    int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return Status::ok();
  }

  std::string temp_name() const {
    return path_ + ".tmp." + std::to_string(::getpid()) + "." +
           std::to_string(g_tmp_counter.fetch_add(1));
  }

  std::string path_;
  std::string dir_;
  std::string named_tmp_;  // set only when O_TMPFILE is unavailable
  int pending_slot_ = -1;  // its slot in the pending registry
  int fd_ = -1;
  uint64_t size_ = 0;
  bool committed_ = false;
};

class LocalFileSystem final : public FileSystem {
 public:
  Status open_readable(const std::string& path, std::unique_ptr<ReadableFile>* out) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      int err = errno;
      if (err == ENOENT) return Status::not_found(path + ": no such file");
      return Status::io_error(path + ": " + errno_text(err));
    }
    if (S_ISDIR(st.st_mode)) return Status::invalid_argument(path + ": is a directory");
    if (::access(path.c_str(), R_OK) != 0) {
      return Status::io_error(path + ": " + errno_text(errno));
    }
    auto file = std::make_unique<MappedReadableFile>(path, static_cast<uint64_t>(st.st_size));
    AGLD_RETURN_IF_ERROR(file->map());
    *out = std::move(file);
    return Status::ok();
  }

  Status open_input(const std::string& path, std::unique_ptr<InputFile>* out) override {
    return open_local_input(path, out);
  }

  Status create_atomic(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    auto file = std::make_unique<AtomicWritableFile>(path);
    AGLD_RETURN_IF_ERROR(file->open());
    *out = std::move(file);
    return Status::ok();
  }

  size_t remove_stale_temporaries(const std::string& dir) override {
    size_t removed = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::optional<pid_t> pid = temporary_writer(it->path().filename().string());
      if (!pid || *pid == ::getpid()) continue;
      // A process of that id still runs (its writer, or another that reused the id): kept.
      if (::kill(*pid, 0) == 0 || errno != ESRCH) continue;
      std::error_code rm;
      if (std::filesystem::remove(it->path(), rm)) ++removed;
    }
    return removed;
  }

 private:
  // The process id in a temporary's name, "NAME.tmp.PID.N" (temp_name()); none for another name.
  static std::optional<pid_t> temporary_writer(const std::string& name) {
    const size_t last = name.rfind('.');
    if (last == std::string::npos || last == 0) return std::nullopt;
    const size_t mid = name.rfind('.', last - 1);
    if (mid == std::string::npos || mid < 5 || name.compare(mid - 4, 4, ".tmp") != 0) return std::nullopt;
    auto digits = [&](size_t from, size_t to) {
      if (from >= to || to - from > 9) return false;
      for (size_t i = from; i < to; ++i) {
        if (name[i] < '0' || name[i] > '9') return false;
      }
      return true;
    };
    if (!digits(mid + 1, last) || !digits(last + 1, name.size())) return std::nullopt;
    return static_cast<pid_t>(std::stol(name.substr(mid + 1, last - mid - 1)));
  }
};

}  // namespace

void remove_pending_temporaries() noexcept {
  for (PendingSlot& slot : g_pending) {
    if (slot.state.load() == 2) ::unlink(slot.path);
  }
}

FileSystem& FileSystem::local() {
  static LocalFileSystem fs;
  return fs;
}

}  // namespace agld
