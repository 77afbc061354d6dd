// The local FileSystem's scratch files: write(2) at the end, pread(2), and holes punched
// (fallocate) where the front has been read.
#include "file/scratch_local.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agld {
namespace {

Status errno_status(int err) { return Status::io_error(std::strerror(err)); }

class LocalScratchFile final : public ScratchFile {
 public:
  explicit LocalScratchFile(int fd) : fd_(fd) {}
  ~LocalScratchFile() override { ::close(fd_); }

  Status append(ByteSpan data) override {
    auto p = reinterpret_cast<const char*>(data.data());
    size_t n = data.size();
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return errno_status(errno);
      p += w;
      n -= static_cast<size_t>(w);
    }
    return Status::ok();
  }

  Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const override {
    for (;;) {
      const ssize_t r = ::pread(fd_, buf, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return errno_status(errno);
      *got = static_cast<size_t>(r);
      return Status::ok();
    }
  }

  bool discard(uint64_t offset, uint64_t n) override {
    return ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                       static_cast<off_t>(n)) == 0;
  }

 private:
  int fd_;
};

}  // namespace

Status create_local_scratch(const std::string& dir, std::unique_ptr<ScratchFile>* out) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // (The name the external shuffle's runs have always had, its only user.)
    std::string name = dir + "/.agld-shuffle-XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0) return errno_status(errno);
  *out = std::make_unique<LocalScratchFile>(fd);
  return Status::ok();
}

}  // namespace agld
