#include "output/checkpoint_io.hpp"

#include <algorithm>

#include "store/crc32c.hpp"

namespace agld::checkpoint {
namespace {

constexpr char kMagic[8] = {'A', 'G', 'L', 'D', 'C', 'K', 'P', 'T'};
constexpr char kEndMagic[8] = {'A', 'G', 'L', 'D', 'C', 'K', 'N', 'D'};
constexpr size_t kBuffer = size_t{1} << 20;
constexpr uint64_t kCrcPiece = uint64_t{64} << 20;

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

CheckpointOut::CheckpointOut(WritableFile& file) : file_(file) {
  buf_.reserve(kBuffer);
  put(kMagic, 8);
  u32(kFormatVersion);
  u32(0);
}

void CheckpointOut::flush() {
  if (buf_.empty()) return;
  crc_ = crc32c::extend(crc_, buf_.data(), buf_.size());
  if (st_.is_ok()) st_ = file_.append({reinterpret_cast<const std::byte*>(buf_.data()), buf_.size()});
  written_ += buf_.size();
  buf_.clear();
}

void CheckpointOut::put(const void* p, size_t n) {
  auto c = static_cast<const char*>(p);
  while (n > 0) {
    if (buf_.size() == kBuffer) flush();
    const size_t take = std::min(n, kBuffer - buf_.size());
    buf_.insert(buf_.end(), c, c + take);
    c += take;
    n -= take;
  }
}

Status CheckpointOut::finish() {
  flush();
  const uint64_t payload = written_ - kHeaderSize;
  char trailer[kTrailerSize];
  std::memcpy(trailer, &payload, 8);
  std::memcpy(trailer + 8, &crc_, 4);
  std::memset(trailer + 12, 0, 4);
  std::memcpy(trailer + 16, kEndMagic, 8);
  if (st_.is_ok()) st_ = file_.append({reinterpret_cast<const std::byte*>(trailer), kTrailerSize});
  return st_;
}

Status CheckpointIn::open(const ReadableFile& file, CheckpointIn* out) {
  ByteSpan all;
  AGLD_RETURN_IF_ERROR(file.view(0, static_cast<size_t>(file.size()), &all));
  return open_in(all, file.path(), &file, out);
}

Status CheckpointIn::open_bytes(ByteSpan bytes, const std::string& name, CheckpointIn* out) {
  return open_in(bytes, name, nullptr, out);
}

// The CRC is checked in pieces, each dropped from memory after (file: the pages' owner, for
// the hint), so that a checkpoint of several hundred MB is not resident beside the state it
// is about to restore.
Status CheckpointIn::open_in(ByteSpan bytes, const std::string& name, const ReadableFile* file, CheckpointIn* out) {
  CheckpointIn in;
  in.bytes_ = bytes;
  in.name_ = name;
  const uint64_t size = bytes.size();
  if (size < kHeaderSize || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return Status::corruption(name + ": not an agld checkpoint (no header)");
  }
  const uint32_t version = load<uint32_t>(bytes.data() + 8);
  if (version != kFormatVersion) {
    return Status::not_supported(name + ": checkpoint format version " + std::to_string(version) +
                                 ", and this build reads version " + std::to_string(kFormatVersion) +
                                 " only: finish the run with the agld that started it");
  }
  if (size < kHeaderSize + kTrailerSize) return Status::corruption(name + ": the checkpoint is truncated (no trailer)");
  const std::byte* t = bytes.data() + size - kTrailerSize;
  if (std::memcmp(t + 16, kEndMagic, 8) != 0 || load<uint32_t>(t + 12) != 0) {
    return Status::corruption(name + ": the checkpoint is truncated or damaged (no end marker)");
  }
  const uint64_t payload = load<uint64_t>(t);
  if (payload != size - kHeaderSize - kTrailerSize) {
    return Status::corruption(name + ": the checkpoint's length (" + std::to_string(size) +
                              " bytes) is not what its trailer says");
  }
  uint32_t crc = 0;
  for (uint64_t at = 0; at < size - kTrailerSize; at += kCrcPiece) {
    const uint64_t n = std::min<uint64_t>(kCrcPiece, size - kTrailerSize - at);
    crc = crc32c::extend(crc, bytes.data() + at, static_cast<size_t>(n));
    if (file) file->drop_cache(at, static_cast<size_t>(n));
  }
  if (crc != load<uint32_t>(t + 8)) return Status::corruption(name + ": the checkpoint's checksum does not match its bytes");
  in.at_ = kHeaderSize;
  in.end_ = size - kTrailerSize;
  in.file_ = file;
  *out = std::move(in);
  return Status::ok();
}

Status CheckpointIn::corrupt(std::string_view what) const {
  return Status::corruption(name_ + ": checkpoint at byte " + std::to_string(at_) + ": " + std::string(what));
}

Status CheckpointIn::get(void* p, size_t n, std::string_view what) {
  if (n > left()) return corrupt(std::string(what) + " runs past the end of the checkpoint");
  if (n) std::memcpy(p, bytes_.data() + at_, n);
  release(at_, n);
  at_ += n;
  return Status::ok();
}

Status CheckpointIn::str(std::string* s, uint64_t max) { return text("a text", s, max); }

Status CheckpointIn::text(std::string_view name, std::string* s, uint64_t max) {
  uint64_t n = 0;
  AGLD_RETURN_IF_ERROR(u64(name, &n));
  if (n > max || n > left()) {
    return corrupt(std::string(name) + " of " + std::to_string(n) + " bytes is past the end or the limit");
  }
  s->assign(reinterpret_cast<const char*>(bytes_.data() + at_), static_cast<size_t>(n));
  at_ += n;
  return Status::ok();
}

Status CheckpointIn::expect(uint32_t want, std::string_view what) {
  uint32_t got = 0;
  AGLD_RETURN_IF_ERROR(u32(&got));
  if (got != want) return corrupt("expected the section of " + std::string(what));
  return Status::ok();
}

Status CheckpointIn::done() {
  if (left() != 0) return corrupt(std::to_string(left()) + " bytes after the last section");
  return Status::ok();
}

}  // namespace agld::checkpoint
