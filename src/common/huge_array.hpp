// A fixed-size, zero-initialised array for the sampler's per-coordinate and per-row state
// (up to hundreds of MB each, read at random). It is mapped anonymously and marked for
// transparent huge pages: with 4 KiB pages every random touch of a 54.7M-coordinate array
// also misses the TLB. The kernel zero-fills the pages on first touch.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace agld {

// The size of a transparent huge page (x86-64): what the large buffers round up to.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

template <typename T>
class HugeArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  HugeArray() = default;
  explicit HugeArray(size_t n) { reset(n); }
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;
  HugeArray(HugeArray&& o) noexcept { swap(o); }
  HugeArray& operator=(HugeArray&& o) noexcept {
    HugeArray(std::move(o)).swap(*this);
    return *this;
  }
  ~HugeArray() { release(); }

  // n zero elements (the old contents are gone).
  void reset(size_t n) {
    release();
    if (n == 0) return;
    bytes_ = (n * sizeof(T) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      bytes_ = 0;
      throw std::bad_alloc();
    }
#ifdef MADV_HUGEPAGE
    ::madvise(p, bytes_, MADV_HUGEPAGE);  // a hint: without THP the array still works
#endif
    data_ = static_cast<T*>(p);
    size_ = n;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  operator std::span<T>() { return {data_, size_}; }
  operator std::span<const T>() const { return {data_, size_}; }

 private:
  void swap(HugeArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(bytes_, o.bytes_);
  }
  void release() {
    if (data_) ::munmap(data_, bytes_);
    data_ = nullptr;
    size_ = 0;
    bytes_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t bytes_ = 0;
};

}  // namespace agld
