// The bytes of a checkpoint (docs/reliability.md, "Checkpoints"): a binary, versioned,
// little-endian stream with a CRC-32C over everything before its trailer.
//
//     header   "AGLDCKPT" (8) | format version u32 | 0 u32
//     payload  the sampler's sections, in a fixed order; each opens with a u32 tag, and
//              every array is its element count (u64) and then its elements
//     trailer  payload length u64 | CRC-32C of header and payload u32 | 0 u32 | "AGLDCKND" (8)
//
// CheckpointOut and CheckpointIn are the archive of common/state_archive.hpp: the algorithm
// objects save and load themselves through it without knowing these bytes.
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
#include <string_view>
#include <type_traits>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"
#include "common/state_archive.hpp"

namespace agld::checkpoint {

// Persistent: a checkpoint of another format version is refused (never renumber; bump it
// whenever what is saved changes).
inline constexpr uint32_t kFormatVersion = 3;  // 2: the Rao-Blackwellized moments; 3: stages
inline constexpr size_t kHeaderSize = 16, kTrailerSize = 24;

// A section's tag: four ASCII characters, little-endian.
constexpr uint32_t tag(std::string_view s) {
  return static_cast<uint32_t>(static_cast<unsigned char>(s[0])) |
         static_cast<uint32_t>(static_cast<unsigned char>(s[1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[2])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[3])) << 24;
}

static_assert(std::endian::native == std::endian::little, "checkpoints are written on little-endian machines");

// The archive a run's state saves itself through (common/state_archive.hpp), as these bytes:
// a section is its tag (u32), a scalar its bytes, a text its length (u64) and bytes, an array
// its count (u64) and elements. The names are not written; they name a value in an error.
class CheckpointOut final : public StateWriter {
 public:
  // Writes the header. Errors are kept and returned by finish() (and status()).
  explicit CheckpointOut(WritableFile& file);

  // The raw values: the run section's (output/checkpoint.cpp).
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void f64(double v) { put(&v, 8); }
  void str(std::string_view s) {
    u64(s.size());
    put(s.data(), s.size());
  }

  void section(std::string_view t) override { u32(tag(t)); }
  void u32(std::string_view, uint32_t v) override { u32(v); }
  void u64(std::string_view, uint64_t v) override { u64(v); }
  void f64(std::string_view, double v) override { f64(v); }
  void text(std::string_view, std::string_view v) override { str(v); }
  void array(std::string_view, StridedSpan<const double> v) override { put_array(v); }
  void array(std::string_view, StridedSpan<const float> v) override { put_array(v); }
  void array(std::string_view, StridedSpan<const uint32_t> v) override { put_array(v); }
  void array(std::string_view, StridedSpan<const uint64_t> v) override { put_array(v); }

  // Writes the trailer (the file is then complete but not committed).
  Status finish();
  const Status& status() const { return st_; }
  uint64_t bytes() const { return written_ + buf_.size(); }

 private:
  template <typename T>
  void put_array(StridedSpan<const T> v) {
    u64(v.size());
    if (v.stride() == 1) {
      put(v.data(), v.size() * sizeof(T));
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) put(&v[i], sizeof(T));
  }
  void put(const void* p, size_t n);
  void flush();

  WritableFile& file_;
  std::vector<char> buf_;
  uint32_t crc_ = 0;
  uint64_t written_ = 0;
  Status st_;
};

class CheckpointIn final : public StateReader {
 public:
  // Checks the header, the trailer and the CRC of file (name: for messages).
  static Status open(const ReadableFile& file, CheckpointIn* out);
  // The same over bytes in memory (the fuzz target's).
  static Status open_bytes(ByteSpan bytes, const std::string& name, CheckpointIn* out);

  // The raw values: the run section's (output/checkpoint.cpp).
  Status u32(uint32_t* v) { return get(v, 4, "a number"); }
  Status u64(uint64_t* v) { return get(v, 8, "a number"); }
  Status f64(double* v) { return get(v, 8, "a number"); }
  Status str(std::string* s, uint64_t max = 1 << 24);
  // The next section's tag must be `want`.
  Status expect(uint32_t want, std::string_view what);

  Status section(std::string_view t, std::string_view what) override { return expect(tag(t), what); }
  Status u32(std::string_view name, uint32_t* v) override { return get(v, 4, name); }
  Status u64(std::string_view name, uint64_t* v) override { return get(v, 8, name); }
  Status f64(std::string_view name, double* v) override { return get(v, 8, name); }
  Status text(std::string_view name, std::string* v, uint64_t max) override;
  Status array(std::string_view name, StridedSpan<double> out) override { return get_array(name, out); }
  Status array(std::string_view name, StridedSpan<float> out) override { return get_array(name, out); }
  Status array(std::string_view name, StridedSpan<uint32_t> out) override { return get_array(name, out); }
  Status array(std::string_view name, StridedSpan<uint64_t> out) override { return get_array(name, out); }
  Status vec(std::string_view name, std::vector<double>* out, uint64_t max) override { return get_vec(name, out, max); }
  Status vec(std::string_view name, std::vector<uint64_t>* out, uint64_t max) override {
    return get_vec(name, out, max);
  }
  Status corrupt(std::string_view what) const override;

  Status done() override;
  uint64_t left() const { return end_ - at_; }

 private:
  static Status open_in(ByteSpan bytes, const std::string& name, const ReadableFile* file, CheckpointIn* out);
  Status get(void* p, size_t n, std::string_view what);
  // An array of exactly out.size() elements: its count, then its elements.
  template <typename T>
  Status get_array(std::string_view name, StridedSpan<T> out) {
    uint64_t got = 0;
    AGLD_RETURN_IF_ERROR(u64(name, &got));
    if (got != out.size()) {
      return corrupt(std::string(name) + " holds " + std::to_string(got) + " values where the run has " +
                     std::to_string(out.size()));
    }
    if (out.stride() == 1) return get(out.data(), out.size() * sizeof(T), name);
    if (out.size() > left() / sizeof(T)) return corrupt(std::string(name) + " runs past the end of the checkpoint");
    const uint64_t from = at_;
    for (size_t i = 0; i < out.size(); ++i) {
      std::memcpy(&out[i], bytes_.data() + at_, sizeof(T));
      at_ += sizeof(T);
    }
    release(from, out.size() * sizeof(T));
    return Status::ok();
  }
  template <typename T>
  Status get_vec(std::string_view name, std::vector<T>* out, uint64_t max) {
    uint64_t n = 0;
    AGLD_RETURN_IF_ERROR(u64(name, &n));
    if (n > max || n > left() / sizeof(T)) {
      return corrupt(std::string(name) + ": a length of " + std::to_string(n) + " is past the end or the limit");
    }
    out->resize(static_cast<size_t>(n));
    return get(out->data(), static_cast<size_t>(n) * sizeof(T), name);
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
