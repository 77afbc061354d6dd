// The local FileSystem's files being written: O_TMPFILE linked into place on commit, or a
// named temporary renamed into place, registered so that a signal handler can remove it.
#include "file/writable_local.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

namespace agld {
namespace {

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
                              std::strerror(err));
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
        return Status::io_error(path_ + ": write failed: " + std::strerror(errno));
      }
      p += w;
      left -= static_cast<size_t>(w);
      size_ += static_cast<uint64_t>(w);
    }
    return Status::ok();
  }

  Status commit() override {
    if (fd_ < 0) return Status::io_error(path_ + ": commit after close");
    if (::fsync(fd_) != 0) return Status::io_error(path_ + ": fsync failed: " + std::strerror(errno));
    std::string tmp = named_tmp_;
    if (tmp.empty()) {
      // A new file is linked at its name directly: one atomic step, which leaves no name
      // behind whenever the process dies (kill -9 included).
      int err = link_to(path_);
      if (err == 0) return committed();
      if (err != EEXIST) {
        return Status::io_error(path_ + ": cannot link the output into place: " + std::strerror(err));
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
        return Status::io_error(path_ + ": cannot link the output into place: " + std::strerror(err));
      }
    }
    if (::rename(tmp.c_str(), path_.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return Status::io_error(path_ + ": cannot rename the output into place: " +
                              std::strerror(err));
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

// The process id in a temporary's name, "NAME.tmp.PID.N" (temp_name()); none for another name.
std::optional<pid_t> temporary_writer(const std::string& name) {
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

}  // namespace

Status create_local_atomic(const std::string& path, std::unique_ptr<WritableFile>* out) {
  auto file = std::make_unique<AtomicWritableFile>(path);
  AGLD_RETURN_IF_ERROR(file->open());
  *out = std::move(file);
  return Status::ok();
}

size_t remove_stale_local_temporaries(const std::string& dir) {
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

void remove_pending_temporaries() noexcept {
  for (PendingSlot& slot : g_pending) {
    if (slot.state.load() == 2) ::unlink(slot.path);
  }
}

}  // namespace agld
