// The bytes of a checkpoint (docs/reliability.md, "Checkpoints"): a binary, versioned,
// little-endian stream with a CRC-32C over everything before its trailer.
//
//     header   "AGLDCKPT" (8) | format version u32 | 0 u32
//     payload  the sampler's sections, in a fixed order; each opens with a u32 tag, and
//              every array is its element count (u64) and then its elements
//     trailer  payload length u64 | CRC-32C of header and payload u32 | 0 u32 | "AGLDCKND" (8)
//
// CheckpointOut streams to a WritableFile through a small buffer, so that saving the state
// never needs a second copy of it in memory. CheckpointIn reads a whole checkpoint in
// place (a ReadableFile's view): open() checks the header, the trailer and the CRC before
// anything is decoded, and every read is bounds-checked, so bytes that lie are a
// corruption error naming the file, never a crash. Internal to the library.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"

namespace agld::checkpoint {

// Persistent: a checkpoint of another format version is refused (never renumber; bump it
// whenever what is saved changes).
inline constexpr uint32_t kFormatVersion = 2;  // 2: the Rao-Blackwellized moments
inline constexpr size_t kHeaderSize = 16, kTrailerSize = 24;

// A section's tag: four ASCII characters, little-endian.
constexpr uint32_t tag(const char (&s)[5]) {
  return static_cast<uint32_t>(static_cast<unsigned char>(s[0])) |
         static_cast<uint32_t>(static_cast<unsigned char>(s[1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[2])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[3])) << 24;
}

static_assert(std::endian::native == std::endian::little, "checkpoints are written on little-endian machines");

class CheckpointOut {
 public:
  // Writes the header. Errors are kept and returned by finish() (and status()).
  explicit CheckpointOut(WritableFile& file);

  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void f64(double v) { put(&v, 8); }
  void str(const std::string& s) {
    u64(s.size());
    put(s.data(), s.size());
  }
  template <typename T>
  void array(std::span<const T> a) {
    static_assert(std::is_arithmetic_v<T>);
    u64(a.size());
    put(a.data(), a.size() * sizeof(T));
  }
  template <typename T>
  void array(const std::vector<T>& a) { array(std::span<const T>(a)); }
  // The same bytes as array() for n values not contiguous in memory: get(i) is the i-th.
  template <typename T, typename Get>
  void array_by(uint64_t n, Get get) {
    static_assert(std::is_arithmetic_v<T>);
    u64(n);
    for (uint64_t i = 0; i < n; ++i) {
      const T v = get(i);
      put(&v, sizeof(T));
    }
  }

  // Writes the trailer (the file is then complete but not committed).
  Status finish();
  const Status& status() const { return st_; }
  uint64_t bytes() const { return written_ + buf_.size(); }

 private:
  void put(const void* p, size_t n);
  void flush();

  WritableFile& file_;
  std::vector<char> buf_;
  uint32_t crc_ = 0;
  uint64_t written_ = 0;
  Status st_;
};

class CheckpointIn {
 public:
  // Checks the header, the trailer and the CRC of file (name: for messages).
  static Status open(const ReadableFile& file, CheckpointIn* out);
  // The same over bytes in memory (the fuzz target's).
  static Status open_bytes(ByteSpan bytes, const std::string& name, CheckpointIn* out);

  Status u32(uint32_t* v) { return get(v, 4, "a number"); }
  Status u64(uint64_t* v) { return get(v, 8, "a number"); }
  Status f64(double* v) { return get(v, 8, "a number"); }
  Status str(std::string* s, uint64_t max = 1 << 24);
  // The next section's tag must be `want`.
  Status expect(uint32_t want, const char* what);
  // An array of exactly `n` elements (n: what the run needs), into out.
  template <typename T>
  Status array(std::span<T> out, const char* what) {
    static_assert(std::is_arithmetic_v<T>);
    AGLD_RETURN_IF_ERROR(count(out.size(), what));
    return get(out.data(), out.size() * sizeof(T), what);
  }
  // What array() reads, for n values not contiguous in memory: set(i, value) for each.
  template <typename T, typename Set>
  Status array_by(uint64_t n, Set set, const char* what) {
    static_assert(std::is_arithmetic_v<T>);
    AGLD_RETURN_IF_ERROR(count(n, what));
    if (n > left() / sizeof(T)) return corrupt(std::string(what) + " runs past the end of the checkpoint");
    const uint64_t from = at_;
    for (uint64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, bytes_.data() + at_, sizeof(T));
      at_ += sizeof(T);
      set(i, v);
    }
    release(from, n * sizeof(T));
    return Status::ok();
  }
  // An array whose count was read apart: its n elements, into out.
  template <typename T>
  Status elements(std::span<T> out, const char* what) {
    static_assert(std::is_arithmetic_v<T>);
    if (out.size() > left() / sizeof(T)) return corrupt(std::string(what) + " runs past the end of the checkpoint");
    return get(out.data(), out.size() * sizeof(T), what);
  }
  // An array of any length up to max elements, into out (resized).
  template <typename T>
  Status vec(std::vector<T>* out, uint64_t max, const char* what) {
    static_assert(std::is_arithmetic_v<T>);
    uint64_t n = 0;
    AGLD_RETURN_IF_ERROR(u64(&n));
    if (n > max || n > left() / sizeof(T)) {
      return corrupt(std::string(what) + ": a length of " + std::to_string(n) + " is past the end or the limit");
    }
    out->resize(static_cast<size_t>(n));
    return get(out->data(), static_cast<size_t>(n) * sizeof(T), what);
  }
  // Everything must have been read.
  Status done();

  Status corrupt(const std::string& what) const;
  uint64_t left() const { return end_ - at_; }

 private:
  static Status open_in(ByteSpan bytes, const std::string& name, const ReadableFile* file, CheckpointIn* out);
  Status get(void* p, size_t n, const char* what);
  // An array's count, which must be the run's n.
  Status count(uint64_t n, const char* what) {
    uint64_t got = 0;
    AGLD_RETURN_IF_ERROR(u64(&got));
    if (got == n) return Status::ok();
    return corrupt(std::string(what) + " holds " + std::to_string(got) + " values where the run has " + std::to_string(n));
  }
  // Read bytes [from, from + n): their pages may leave the cache (large reads alone).
  void release(uint64_t from, uint64_t n) const {
    if (file_ && n >= (uint64_t{1} << 20)) file_->drop_cache(from, n);
  }

  const ReadableFile* file_ = nullptr;  // for drop_cache hints; null over bytes
  ByteSpan bytes_;
  std::string name_;
  uint64_t at_ = 0, end_ = 0;
};

}  // namespace agld::checkpoint
