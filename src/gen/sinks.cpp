// agld gen's sinks (sinks.hpp): write(2) to stdout, appends to a WritableFile, and a zstd
// stream in front of either.
#include "gen/sinks.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agld::gen {

Status StdoutSink::write(const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(STDOUT_FILENO, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::io_error(std::string("<stdout>: write failed: ") + std::strerror(errno));
    }
    data += w;
    n -= static_cast<size_t>(w);
    bytes_ += static_cast<uint64_t>(w);
  }
  return Status::ok();
}

Status FileSink::write(const char* data, size_t n) {
  AGLD_RETURN_IF_ERROR(file_->append(ByteSpan(reinterpret_cast<const std::byte*>(data), n)));
  bytes_ += n;
  return Status::ok();
}

Status ZstdSink::open(int level, int workers) {
  cctx_ = ZSTD_createCCtx();
  if (cctx_ == nullptr) return Status::internal("cannot create a zstd context");
  AGLD_RETURN_IF_ERROR(check(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level)));
  AGLD_RETURN_IF_ERROR(check(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1)));
  if (workers > 0) {
    // A zstd built without threads refuses; compress on the calling thread then.
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_nbWorkers, workers);
  }
  out_.resize(ZSTD_CStreamOutSize());
  return Status::ok();
}

Status ZstdSink::write(const char* data, size_t n) {
  ZSTD_inBuffer in{data, n, 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    AGLD_RETURN_IF_ERROR(check(ZSTD_compressStream2(cctx_, &out, &in, ZSTD_e_continue)));
    AGLD_RETURN_IF_ERROR(drain(out));
  }
  return Status::ok();
}

Status ZstdSink::finish() {
  ZSTD_inBuffer in{nullptr, 0, 0};
  for (;;) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    size_t left = ZSTD_compressStream2(cctx_, &out, &in, ZSTD_e_end);
    AGLD_RETURN_IF_ERROR(check(left));
    AGLD_RETURN_IF_ERROR(drain(out));
    if (left == 0) break;
  }
  return inner_->finish();
}

Status ZstdSink::check(size_t r) const {
  if (ZSTD_isError(r)) return Status::internal(name_ + ": zstd: " + ZSTD_getErrorName(r));
  return Status::ok();
}

Status ZstdSink::drain(const ZSTD_outBuffer& out) {
  if (out.pos == 0) return Status::ok();
  bytes_ += out.pos;
  return inner_->write(out_.data(), out.pos);
}

}  // namespace agld::gen
