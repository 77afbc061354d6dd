// Shared by the fuzz targets (fuzz/README in docs/reliability.md): an in-memory FileSystem,
// a scratch directory of the process's own, and the checks every decoded chunk must pass.
// A failed check calls fuzz_fail, which aborts: libFuzzer then saves the input.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld::fuzz {

[[noreturn]] inline void fuzz_fail(const std::string& what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::abort();
}
#define AGLD_FUZZ_CHECK(cond, what) \
  do {                              \
    if (!(cond)) ::agld::fuzz::fuzz_fail(std::string(#cond) + ": " + (what)); \
  } while (0)

// Bytes kept 16-byte aligned, as malloc would (a mapping is page-aligned; the store reader
// assumes neither).
class Bytes {
 public:
  Bytes() = default;
  explicit Bytes(ByteSpan b) : words_((b.size() + 15) / 16 * 2 + 2), size_(b.size()) {
    if (!b.empty()) std::memcpy(words_.data(), b.data(), b.size());
  }
  ByteSpan span() const { return {reinterpret_cast<const std::byte*>(words_.data()), size_}; }
  size_t size() const { return size_; }

 private:
  std::vector<uint64_t> words_;
  size_t size_ = 0;
};

// Files held in memory: read-only files served from them, atomic writes that land in them on
// commit. Paths are plain strings ("dir/name").
class MemoryFileSystem final : public FileSystem {
 public:
  void put(const std::string& path, ByteSpan bytes) { files_[path] = std::make_shared<Bytes>(bytes); }
  void put(const std::string& path, const std::string& text) {
    put(path, ByteSpan(reinterpret_cast<const std::byte*>(text.data()), text.size()));
  }
  const Bytes* get(const std::string& path) const {
    auto it = files_.find(path);
    return it == files_.end() ? nullptr : it->second.get();
  }

  Status open_readable(const std::string& path, std::unique_ptr<ReadableFile>* out) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::not_found(path + ": no such file");
    *out = std::make_unique<File>(path, it->second);
    return Status::ok();
  }
  Status create_atomic(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    *out = std::make_unique<Writer>(this, path);
    return Status::ok();
  }

 private:
  class File final : public ReadableFile {
   public:
    File(std::string path, std::shared_ptr<const Bytes> bytes) : path_(std::move(path)), bytes_(std::move(bytes)) {}
    const std::string& path() const override { return path_; }
    uint64_t size() const override { return bytes_->size(); }
    Status view(uint64_t offset, size_t n, ByteSpan* out) const override {
      const uint64_t size = bytes_->size();
      if (offset > size || n > size - offset) {
        return Status::corruption(path_ + ": read of " + std::to_string(n) + " bytes at " +
                                  std::to_string(offset) + " is past the end of the file");
      }
      *out = bytes_->span().subspan(static_cast<size_t>(offset), n);
      return Status::ok();
    }

   private:
    std::string path_;
    std::shared_ptr<const Bytes> bytes_;
  };
  class Writer final : public WritableFile {
   public:
    Writer(MemoryFileSystem* fs, std::string path) : fs_(fs), path_(std::move(path)) {}
    const std::string& path() const override { return path_; }
    Status append(ByteSpan data) override {
      data_.insert(data_.end(), data.begin(), data.end());
      return Status::ok();
    }
    uint64_t size() const override { return data_.size(); }
    Status commit() override {
      fs_->put(path_, ByteSpan(data_.data(), data_.size()));
      return Status::ok();
    }

   private:
    MemoryFileSystem* fs_;
    std::string path_;
    std::vector<std::byte> data_;
  };
  std::map<std::string, std::shared_ptr<const Bytes>> files_;
};

// A directory of this process's own, made once: on tmpfs (/dev/shm) when there is one, so
// that the commits' fsync costs nothing, else under $TMPDIR or /tmp. Removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = "/dev/shm";
    std::error_code ec;
    if (!std::filesystem::is_directory(base, ec) || ::access(base.c_str(), W_OK) != 0) {
      const char* t = std::getenv("TMPDIR");
      base = t && *t ? t : "/tmp";
    }
    std::filesystem::path d = base / ("agld-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] { std::error_code e; std::filesystem::remove_all(scratch_dir(), e); });
    return d;
  }();
  return dir;
}

// The checks a decoded chunk must pass (docs/format.md, "Raw chunk"): offsets from 0 to nnz,
// never falling, indices strictly increasing within a row and below d, labels and values finite.
inline void check_decoded(const DecodedChunk& c, uint64_t features, bool binary_mapped) {
  const auto off = c.offsets();
  AGLD_FUZZ_CHECK(off.size() == uint64_t{c.row_count()} + 1, "offsets");
  AGLD_FUZZ_CHECK(off[0] == 0 && off[c.row_count()] == c.nnz(), "offsets span nnz");
  const auto idx = c.indices();
  for (uint32_t r = 0; r < c.row_count(); ++r) {
    AGLD_FUZZ_CHECK(off[r] <= off[r + 1], "row " + std::to_string(r));
    for (uint32_t p = off[r]; p < off[r + 1]; ++p) {
      AGLD_FUZZ_CHECK(idx[p] < features, "index below d");
      AGLD_FUZZ_CHECK(p == off[r] || idx[p] > idx[p - 1], "increasing in row");
    }
    const double y = c.labels()[r];
    AGLD_FUZZ_CHECK(std::isfinite(y), "finite label");
    if (binary_mapped) AGLD_FUZZ_CHECK(y == 1 || y == -1, "binary label mapped to +-1");
  }
  for (float v : c.values()) AGLD_FUZZ_CHECK(std::isfinite(v), "finite value");
}

}  // namespace agld::fuzz
