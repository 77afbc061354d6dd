// A view of n values `stride` elements apart; stride 1 is a span. The lazy state keeps each
// coordinate's numbers together, one cache line a coordinate (sampler/lazy_state.hpp), and
// hands out its positions and its aggregate as strided views. Converts from any contiguous
// range of T (a vector, a span), so that callers with plain arrays pass them as before.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <type_traits>

namespace agld {

template <typename T>
class StridedSpan {
 public:
  StridedSpan() = default;
  StridedSpan(T* data, size_t size, size_t stride) : data_(data), size_(size), stride_(stride) {}
  template <typename R>
    requires std::is_constructible_v<std::span<T>, R&>
  StridedSpan(R&& r) {  // NOLINT: implicit, like a span's
    const std::span<T> s(r);
    data_ = s.data();
    size_ = s.size();
  }

  // A view of const values from one of mutable ones.
  template <typename U>
    requires std::is_same_v<const U, T> && (!std::is_same_v<U, T>)
  StridedSpan(const StridedSpan<U>& v) : data_(v.data()), size_(v.size()), stride_(v.stride()) {}  // NOLINT: implicit

  T& operator[](size_t i) const { return data_[i * stride_]; }
  size_t size() const { return size_; }
  // The first value and the distance between values, in T (1: contiguous, a span).
  T* data() const { return data_; }
  size_t stride() const { return stride_; }
  void fill(const T& v) const
    requires(!std::is_const_v<T>)
  {
    if (stride_ == 1) {
      std::fill(data_, data_ + size_, v);
      return;
    }
    for (size_t i = 0; i < size_; ++i) data_[i * stride_] = v;
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t stride_ = 1;
};

}  // namespace agld
