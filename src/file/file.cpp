// What every ReadableFile has: the aligned read buffer, and read_uncached by copying from
// view() (file systems that can do better override it: readable_local.cpp); and what every
// FileSystem has: open_input from open_readable (the local one reads with read(2) instead),
// and scratch files held in memory (the local one's are on disk).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "agld/file.hpp"

namespace agld {

ReadBuffer& ReadBuffer::operator=(ReadBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = other.data_;
    capacity_ = other.capacity_;
    other.data_ = nullptr;
    other.capacity_ = 0;
  }
  return *this;
}

ReadBuffer::~ReadBuffer() { std::free(data_); }

std::byte* ReadBuffer::reserve(size_t n) {
  if (n <= capacity_ && data_) return data_;
  const size_t size = std::max<size_t>((n + kAlign - 1) / kAlign * kAlign, kAlign);
  void* p = std::aligned_alloc(kAlign, size);
  if (!p) throw std::bad_alloc();
  std::free(data_);
  data_ = static_cast<std::byte*>(p);
  capacity_ = size;
  return data_;
}

Status ReadableFile::read_uncached(uint64_t offset, size_t n, ReadBuffer* buf, ByteSpan* out) const {
  ByteSpan view_of;
  AGLD_RETURN_IF_ERROR(view(offset, n, &view_of));
  std::byte* dst = buf->reserve(n);
  if (n > 0) std::memcpy(dst, view_of.data(), n);
  drop_cache(offset, n);
  *out = ByteSpan(dst, n);
  return Status::ok();
}

namespace {

// An input served from a ReadableFile's view: for file systems that hold files in memory.
class ViewInputFile final : public InputFile {
 public:
  explicit ViewInputFile(std::unique_ptr<ReadableFile> file) : file_(std::move(file)) {}
  const std::string& path() const override { return file_->path(); }
  std::optional<uint64_t> size() const override { return file_->size(); }
  Status read(char* buf, size_t n, size_t* got) override {
    AGLD_RETURN_IF_ERROR(pread(at_, buf, n, got));
    at_ += *got;
    return Status::ok();
  }
  Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const override {
    const uint64_t size = file_->size();
    const size_t k = offset >= size ? 0 : static_cast<size_t>(std::min<uint64_t>(n, size - offset));
    *got = k;
    if (k == 0) return Status::ok();
    ByteSpan bytes;
    AGLD_RETURN_IF_ERROR(file_->view(offset, k, &bytes));
    std::memcpy(buf, bytes.data(), k);
    return Status::ok();
  }

 private:
  std::unique_ptr<ReadableFile> file_;
  uint64_t at_ = 0;
};

// A scratch file held in memory: for file systems that hold files in memory.
class MemoryScratchFile final : public ScratchFile {
 public:
  Status append(ByteSpan data) override {
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    return Status::ok();
  }
  Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const override {
    const size_t k = offset >= bytes_.size()
                         ? 0
                         : static_cast<size_t>(std::min<uint64_t>(n, bytes_.size() - offset));
    if (k > 0) std::memcpy(buf, bytes_.data() + offset, k);
    *got = k;
    return Status::ok();
  }

 private:
  std::vector<std::byte> bytes_;
};

}  // namespace

Status FileSystem::open_input(const std::string& path, std::unique_ptr<InputFile>* out) {
  std::unique_ptr<ReadableFile> file;
  AGLD_RETURN_IF_ERROR(open_readable(path, &file));
  *out = std::make_unique<ViewInputFile>(std::move(file));
  return Status::ok();
}

size_t FileSystem::remove_stale_temporaries(const std::string&) { return 0; }

Status FileSystem::create_scratch(const std::string&, std::unique_ptr<ScratchFile>* out) {
  *out = std::make_unique<MemoryScratchFile>();
  return Status::ok();
}

}  // namespace agld
