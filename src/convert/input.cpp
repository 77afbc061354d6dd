#include "convert/input.hpp"

#include <sys/types.h>

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

// The shared state of a source: the input file, a few sniffed bytes to replay first, and a
// count of the bytes consumed.
struct SourceState {
  std::unique_ptr<InputFile> file;
  std::vector<char> prefix;
  size_t prefix_pos = 0;
  uint64_t consumed = 0;
  Status error;  // of a failed read

  const std::string& name() const { return file->path(); }

  // Returns bytes read, 0 at the end, -1 on error (in error).
  ssize_t read(char* s, size_t n) {
    if (prefix_pos < prefix.size()) {
      size_t k = std::min(n, prefix.size() - prefix_pos);
      std::memcpy(s, prefix.data() + prefix_pos, k);
      prefix_pos += k;
      return static_cast<ssize_t>(k);
    }
    size_t got = 0;
    error = file->read(s, n, &got);
    if (!error.is_ok()) return -1;
    consumed += got;
    return static_cast<ssize_t>(got);
  }
};

// A Boost.Iostreams source over SourceState.
class StateSource {
 public:
  using char_type = char;
  using category = io::source_tag;
  explicit StateSource(SourceState* st) : st_(st) {}
  std::streamsize read(char* s, std::streamsize n) {
    ssize_t r = st_->read(s, static_cast<size_t>(n));
    if (r < 0) throw std::ios_base::failure(st_->error.message());
    return r == 0 ? -1 : static_cast<std::streamsize>(r);
  }

 private:
  SourceState* st_;
};

class PlainInput final : public TextInput {
 public:
  PlainInput(std::unique_ptr<SourceState> st, bool regular) : st_(std::move(st)), regular_(regular) {}
  bool positional() const override { return regular_; }
  Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const override {
    return st_->file->pread(offset, buf, n, got);
  }
  Status read(char* buf, size_t n, size_t* got) override {
    ssize_t r = st_->read(buf, n);
    if (r < 0) return st_->error;
    *got = static_cast<size_t>(r);
    return Status::ok();
  }
  uint64_t source_bytes_read() const override { return st_->consumed; }
  const char* compression() const override { return "plain"; }

 private:
  std::unique_ptr<SourceState> st_;
  bool regular_;
};

class FilteredInput final : public TextInput {
 public:
  FilteredInput(std::unique_ptr<SourceState> st, const char* kind) : st_(std::move(st)), kind_(kind) {
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
    buf_.push(StateSource(st_.get()));
  }
  Status read(char* buf, size_t n, size_t* got) override {
    try {
      std::streamsize r = buf_.sgetn(buf, static_cast<std::streamsize>(n));
      *got = r > 0 ? static_cast<size_t>(r) : 0;
    } catch (const std::exception& e) {
      // A read of the file that failed is its own error, not the decompressor's.
      if (!st_->error.is_ok()) return st_->error;
      return Status::data_error(st_->name() + ": " + kind_ + " decompression failed: " + e.what());
    }
    if (!st_->error.is_ok()) return st_->error;  // a filter that swallowed the exception
    return Status::ok();
  }
  uint64_t source_bytes_read() const override { return st_->consumed; }
  const char* compression() const override { return kind_; }

 private:
  std::unique_ptr<SourceState> st_;
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

Status TextInput::open(const std::string& name, std::unique_ptr<TextInput>* out, FileSystem& fs) {
  auto st = std::make_unique<SourceState>();
  AGLD_RETURN_IF_ERROR(fs.open_input(name, &st->file));
  SourceInfo info;
  info.name = name;
  info.size = st->file->size();
  info.mtime = st->file->mtime();
  // Sniff up to 6 bytes (short reads from pipes are retried until 6 bytes or the end).
  st->prefix.resize(6);
  size_t have = 0;
  while (have < 6) {
    size_t got = 0;
    AGLD_RETURN_IF_ERROR(st->file->read(st->prefix.data() + have, 6 - have, &got));
    if (got == 0) break;
    have += got;
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
