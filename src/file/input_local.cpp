#include "file/input_local.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agld {
namespace {

class FdInputFile final : public InputFile {
 public:
  FdInputFile(std::string path, int fd, bool owned) : path_(std::move(path)), fd_(fd), owned_(owned) {}
  ~FdInputFile() override {
    if (owned_) ::close(fd_);
  }

  // Its size and time, if it is a regular file; a directory is refused.
  Status stat() {
    struct stat s;
    if (::fstat(fd_, &s) != 0) return Status::ok();  // read() will say what is wrong
    if (S_ISDIR(s.st_mode)) return Status::invalid_argument(path_ + ": is a directory");
    if (S_ISREG(s.st_mode)) {
      size_ = static_cast<uint64_t>(s.st_size);
      mtime_ = static_cast<int64_t>(s.st_mtim.tv_sec);
      ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    return Status::ok();
  }

  const std::string& path() const override { return path_; }
  std::optional<uint64_t> size() const override { return size_; }
  std::optional<int64_t> mtime() const override { return mtime_; }

  Status read(char* buf, size_t n, size_t* got) override {
    for (;;) {
      const ssize_t r = ::read(fd_, buf, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return failed(errno);
      *got = static_cast<size_t>(r);
      return Status::ok();
    }
  }

  Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const override {
    if (!size_) return Status::internal(path_ + ": pread on an input that is not a regular file");
    for (;;) {
      const ssize_t r = ::pread(fd_, buf, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return failed(errno);
      *got = static_cast<size_t>(r);
      return Status::ok();
    }
  }

 private:
  Status failed(int err) const { return Status::io_error(path_ + ": read failed: " + std::strerror(err)); }

  std::string path_;
  int fd_;
  bool owned_;
  std::optional<uint64_t> size_;
  std::optional<int64_t> mtime_;
};

}  // namespace

Status open_local_input(const std::string& path, std::unique_ptr<InputFile>* out) {
  if (path == "-") {
    // A stream, even when a regular file is redirected to it: no size, no pread, and the
    // store's source record has no size or time (the shell's file is not named).
    *out = std::make_unique<FdInputFile>("<stdin>", STDIN_FILENO, false);
    return Status::ok();
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::not_found(path + ": no such file");
    return Status::io_error(path + ": cannot open: " + std::strerror(err));
  }
  auto in = std::make_unique<FdInputFile>(path, fd, true);
  AGLD_RETURN_IF_ERROR(in->stat());
  *out = std::move(in);
  return Status::ok();
}

}  // namespace agld
