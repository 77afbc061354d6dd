#include "convert/input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/iostreams/categories.hpp>
#include <boost/iostreams/filter/bzip2.hpp>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filter/lzma.hpp>
#include <boost/iostreams/filter/zstd.hpp>
#include <boost/iostreams/filtering_streambuf.hpp>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

namespace agld {
namespace {

namespace io = boost::iostreams;

// The shared state of a source: a file descriptor, a few sniffed bytes to replay first, and
// a count of the bytes consumed.
struct FdState {
  int fd = -1;
  bool owned = false;
  std::vector<char> prefix;
  size_t prefix_pos = 0;
  uint64_t consumed = 0;
  std::string name;
  int error = 0;  // errno of a failed read

  ~FdState() {
    if (owned && fd >= 0) ::close(fd);
  }

  // Returns bytes read, 0 at the end, -1 on error (errno in error).
  ssize_t read(char* s, size_t n) {
    if (prefix_pos < prefix.size()) {
      size_t k = std::min(n, prefix.size() - prefix_pos);
      std::memcpy(s, prefix.data() + prefix_pos, k);
      prefix_pos += k;
      return static_cast<ssize_t>(k);
    }
    for (;;) {
      ssize_t r = ::read(fd, s, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        error = errno;
        return -1;
      }
      consumed += static_cast<uint64_t>(r);
      return r;
    }
  }
};

// A Boost.Iostreams source over FdState.
class FdSource {
 public:
  using char_type = char;
  using category = io::source_tag;
  explicit FdSource(FdState* st) : st_(st) {}
  std::streamsize read(char* s, std::streamsize n) {
    ssize_t r = st_->read(s, static_cast<size_t>(n));
    if (r < 0) throw std::ios_base::failure(std::strerror(st_->error));
    return r == 0 ? -1 : static_cast<std::streamsize>(r);
  }

 private:
  FdState* st_;
};

class PlainInput final : public TextInput {
 public:
  PlainInput(std::unique_ptr<FdState> st, bool regular) : st_(std::move(st)), regular_(regular) {}
  bool positional() const override { return regular_; }
  Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const override {
    for (;;) {
      ssize_t r = ::pread(st_->fd, buf, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::io_error(st_->name + ": read failed: " + std::strerror(errno));
      *got = static_cast<size_t>(r);
      return Status::ok();
    }
  }
  Status read(char* buf, size_t n, size_t* got) override {
    ssize_t r = st_->read(buf, n);
    if (r < 0) return Status::io_error(st_->name + ": read failed: " + std::strerror(st_->error));
    *got = static_cast<size_t>(r);
    return Status::ok();
  }
  uint64_t source_bytes_read() const override { return st_->consumed; }
  const char* compression() const override { return "plain"; }

 private:
  std::unique_ptr<FdState> st_;
  bool regular_;
};

class FilteredInput final : public TextInput {
 public:
  FilteredInput(std::unique_ptr<FdState> st, const char* kind) : st_(std::move(st)), kind_(kind) {
    std::string_view k(kind);
    if (k == "gzip") {
      buf_.push(io::gzip_decompressor());
    } else if (k == "bzip2") {
      buf_.push(io::bzip2_decompressor());
    } else if (k == "xz") {
      buf_.push(io::lzma_decompressor());
    } else {
      buf_.push(io::zstd_decompressor());
    }
    buf_.push(FdSource(st_.get()));
  }
  Status read(char* buf, size_t n, size_t* got) override {
    try {
      std::streamsize r = buf_.sgetn(buf, static_cast<std::streamsize>(n));
      *got = r > 0 ? static_cast<size_t>(r) : 0;
    } catch (const std::exception& e) {
      return Status::data_error(st_->name + ": " + kind_ + " decompression failed: " + e.what());
    }
    return Status::ok();
  }
  uint64_t source_bytes_read() const override { return st_->consumed; }
  const char* compression() const override { return kind_; }

 private:
  std::unique_ptr<FdState> st_;
  const char* kind_;
  io::filtering_streambuf<io::input> buf_;
};

const char* sniff(const std::vector<char>& b) {
  auto has = [&](std::string_view magic) {
    return b.size() >= magic.size() && std::memcmp(b.data(), magic.data(), magic.size()) == 0;
  };
  if (has("\x1f\x8b")) return "gzip";
  if (has("BZh")) return "bzip2";
  if (has(std::string_view("\xfd" "7zXZ\0", 6))) return "xz";
  if (has("\x28\xb5\x2f\xfd")) return "zstd";
  return "plain";
}

}  // namespace

Status TextInput::open(const std::string& name, std::unique_ptr<TextInput>* out) {
  auto st = std::make_unique<FdState>();
  st->name = name == "-" ? "<stdin>" : name;
  SourceInfo info;
  info.name = name;
  if (name == "-") {
    st->fd = STDIN_FILENO;
  } else {
    st->fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (st->fd < 0) {
      int err = errno;
      if (err == ENOENT) return Status::not_found(name + ": no such file");
      return Status::io_error(name + ": cannot open: " + std::strerror(err));
    }
    st->owned = true;
    struct stat s;
    if (::fstat(st->fd, &s) == 0) {
      if (S_ISDIR(s.st_mode)) return Status::invalid_argument(name + ": is a directory");
      if (S_ISREG(s.st_mode)) {
        info.size = static_cast<uint64_t>(s.st_size);
        info.mtime = static_cast<int64_t>(s.st_mtim.tv_sec);
        ::posix_fadvise(st->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
      }
    }
  }
  // Sniff up to 6 bytes (short reads from pipes are retried until 6 bytes or the end).
  st->prefix.resize(6);
  size_t have = 0;
  while (have < 6) {
    ssize_t r = ::read(st->fd, st->prefix.data() + have, 6 - have);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::io_error(st->name + ": read failed: " + std::strerror(errno));
    if (r == 0) break;
    have += static_cast<size_t>(r);
  }
  st->prefix.resize(have);
  st->consumed = have;
  const char* kind = sniff(st->prefix);
  std::unique_ptr<TextInput> in;
  if (std::string_view(kind) == "plain") {
    const bool regular = info.size.has_value();  // set for regular files only
    in = std::make_unique<PlainInput>(std::move(st), regular);
  } else {
    in = std::make_unique<FilteredInput>(std::move(st), kind);
  }
  in->info_ = std::move(info);
  *out = std::move(in);
  return Status::ok();
}

}  // namespace agld
