// Owning handles of zstd's compression and decompression contexts (the store layer keeps
// them thread_local or per call). Internal to the store layer.
#pragma once

#include <zstd.h>

namespace agld::store_detail {

struct ZstdCCtx {
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  ZstdCCtx() = default;
  ZstdCCtx(const ZstdCCtx&) = delete;
  ZstdCCtx& operator=(const ZstdCCtx&) = delete;
  ~ZstdCCtx() { ZSTD_freeCCtx(ctx); }
};

struct ZstdDCtx {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  ZstdDCtx() = default;
  ZstdDCtx(const ZstdDCtx&) = delete;
  ZstdDCtx& operator=(const ZstdDCtx&) = delete;
  ~ZstdDCtx() { ZSTD_freeDCtx(ctx); }
};

}  // namespace agld::store_detail
