// What every ReadableFile has: the aligned read buffer, and read_uncached by copying from
// view() (file systems that can do better override it: file_local.cpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

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

}  // namespace agld
