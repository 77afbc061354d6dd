// Where agld gen's text goes: stdout, a file being written (FileSystem::create_atomic), or
// either through one zstd frame.
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"

namespace agld::gen {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status write(const char* data, size_t n) = 0;
  // Writes whatever is buffered (the end of a zstd frame). The bytes are not yet in place.
  virtual Status finish() { return Status::ok(); }
  uint64_t bytes() const { return bytes_; }

 protected:
  uint64_t bytes_ = 0;
};

class StdoutSink final : public Sink {
 public:
  Status write(const char* data, size_t n) override;
};

class FileSink final : public Sink {
 public:
  explicit FileSink(WritableFile* file) : file_(file) {}
  Status write(const char* data, size_t n) override;

 private:
  WritableFile* file_;
};

// One zstd frame through the streaming API; with workers, zstd compresses on its own
// threads while the pipeline draws the next rows.
class ZstdSink final : public Sink {
 public:
  explicit ZstdSink(Sink* inner, std::string name) : inner_(inner), name_(std::move(name)) {}
  ~ZstdSink() override { ZSTD_freeCCtx(cctx_); }

  Status open(int level, int workers);
  Status write(const char* data, size_t n) override;
  Status finish() override;

 private:
  Status check(size_t r) const;
  Status drain(const ZSTD_outBuffer& out);

  Sink* inner_;
  std::string name_;
  ZSTD_CCtx* cctx_ = nullptr;
  std::vector<char> out_;
};

}  // namespace agld::gen
