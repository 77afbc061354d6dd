// zstd_bench STORE [THREADS] [REPS] [--plain]: zstd's own decompression speed on a store's
// chunks, with nothing else (no checksum, no checks, no unshuffling, no I/O: the stored bytes
// are copied into memory first), the purest form of scan_bench's decompression limit; and
// beside it the ceiling of any reader that delivers checked rows of this store: zstd, the
// chunk's CRC-32C over the raw bytes, and a streaming write of the chunk's decoded bytes
// (decoded_bytes(): what the reader's cache holds) into a ring of buffers as large as a
// reader's, with no transform at all. THREADS threads take chunks from a shared counter,
// each into buffers of its own. Prints, as one JSON object, the median and best raw MB/s of
// each over REPS passes (the ceiling as raw MB/s too, so both divide the same raw bytes).
//
// --plain: also the same rows as a plain CSR chunk each (row offsets, labels, indices,
// values: the decoded chunk's arrays as they are), compressed with the store's zstd level and
// literal mode: its stored bytes, zstd alone and zstd with the CRC on it. That is a store
// whose zstd output is the rows themselves, the store the "zstd limit" describes.
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_c_literalCompressionMode
#include <zstd.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agld/store.hpp"
#include "store/crc32c.hpp"

namespace {

struct Chunk {
  std::vector<std::byte> stored;
  size_t raw = 0;
  size_t decoded = 0;  // 0: no decoded write (the plain chunks: zstd's output is the rows)
};

struct Speed {
  double median = 0, best = 0;  // raw MB/s
};

// What a thread does with a chunk after zstd: nothing, the CRC, or the CRC and the write.
enum class Work { kZstd, kCrc, kCeiling };

// A ring of buffers of a decoded chunk each, written past the caches as the reader's
// decoding writes its cache (the ring is larger than the L3's share of a core).
class Ring {
 public:
  explicit Ring(size_t slot_bytes) : slot_((slot_bytes + 63) / 64 * 64) {
    mem_.reset(static_cast<std::byte*>(std::aligned_alloc(64, slot_ * kSlots)));
    std::memset(mem_.get(), 0, slot_ * kSlots);  // fault the pages in before timing
  }
  void write(size_t bytes, uint32_t word) {
    std::byte* p = mem_.get() + slot_ * next_;
    next_ = (next_ + 1) % kSlots;
#if defined(__x86_64__)
    const __m128i v = _mm_set1_epi32(static_cast<int>(word));
    for (size_t i = 0; i + 16 <= bytes; i += 16) _mm_stream_si128(reinterpret_cast<__m128i*>(p + i), v);
    _mm_sfence();
#else
    std::memset(p, static_cast<int>(word & 0xff), bytes);
#endif
  }

 private:
  static constexpr size_t kSlots = 24;
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  size_t slot_;
  size_t next_ = 0;
  std::unique_ptr<std::byte, Free> mem_;
};

bool measure(const std::vector<Chunk>& chunks, int threads, int reps, Work work, Speed* out) {
  size_t max_raw = 0, max_decoded = 0;
  uint64_t raw_total = 0;
  for (const Chunk& c : chunks) {
    max_raw = std::max(max_raw, c.raw);
    max_decoded = std::max(max_decoded, c.decoded);
    raw_total += c.raw;
  }
  std::vector<double> mbps;
  std::atomic<bool> failed{false};
  std::atomic<uint32_t> sink{0};
  for (int r = 0; r < reps; ++r) {
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::chrono::steady_clock::time_point t0;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        ZSTD_DCtx* ctx = ZSTD_createDCtx();
        std::vector<std::byte> raw(max_raw);
        std::unique_ptr<Ring> ring;
        if (work == Work::kCeiling && max_decoded > 0) ring = std::make_unique<Ring>(max_decoded);
        uint32_t acc = 0;
        ++ready;
        while (!go.load()) std::this_thread::yield();
        for (size_t k; (k = next.fetch_add(1)) < chunks.size();) {
          const Chunk& c = chunks[k];
          const size_t n = ZSTD_decompressDCtx(ctx, raw.data(), c.raw, c.stored.data(), c.stored.size());
          if (ZSTD_isError(n) || n != c.raw) failed = true;
          if (work != Work::kZstd) acc ^= agld::crc32c::extend(0, raw.data(), c.raw);
          if (ring && c.decoded > 0) ring->write(c.decoded, acc);
        }
        sink ^= acc;
        ZSTD_freeDCtx(ctx);
      });
    }
    while (ready.load() < threads) std::this_thread::yield();  // buffers set up, untimed
    t0 = std::chrono::steady_clock::now();
    go = true;
    for (std::thread& t : pool) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    mbps.push_back(static_cast<double>(raw_total) / 1e6 / s);
  }
  std::sort(mbps.begin(), mbps.end());
  *out = {mbps[mbps.size() / 2], mbps.back()};
  return !failed;
}

// The chunk's decoded arrays, as they are, one after the other.
std::vector<std::byte> plain_chunk(const agld::DecodedChunk& c) {
  std::vector<std::byte> raw;
  auto append = [&](const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    raw.insert(raw.end(), b, b + n);
  };
  append(c.offsets().data(), c.offsets().size_bytes());
  append(c.labels().data(), c.labels().size_bytes());
  append(c.indices().data(), c.indices().size_bytes());
  append(c.values().data(), c.values().size_bytes());
  return raw;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool plain = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--plain") {
      plain = true;
    } else {
      args.emplace_back(argv[i]);
    }
  }
  if (args.empty()) {
    std::fprintf(stderr, "usage: zstd_bench STORE [THREADS] [REPS] [--plain]\n");
    return 64;
  }
  const int threads = args.size() > 1 ? std::max(1, std::atoi(args[1].c_str())) : 1;
  const int reps = args.size() > 2 ? std::max(1, std::atoi(args[2].c_str())) : 5;
  std::unique_ptr<agld::Store> store;
  agld::Status st = agld::Store::open(args[0], &store);
  if (!st.is_ok()) {
    std::fprintf(stderr, "zstd_bench: %s\n", st.message().c_str());
    return 66;
  }
  std::vector<Chunk> chunks;
  uint64_t raw_total = 0;
  for (size_t k = 0; k < store->chunk_count(); ++k) {
    const agld::ChunkInfo& c = store->chunk(k);
    if (c.codec != agld::Codec::kZstd) continue;
    agld::ByteSpan view;
    st = store->file().view(c.offset, c.stored_size, &view);
    if (!st.is_ok()) {
      std::fprintf(stderr, "zstd_bench: %s\n", st.message().c_str());
      return 74;
    }
    chunks.push_back({std::vector<std::byte>(view.begin(), view.end()), c.raw_size, agld::decoded_bytes(c)});
    raw_total += c.raw_size;
  }
  if (chunks.empty()) {
    std::fprintf(stderr, "zstd_bench: no zstd chunks in %s\n", args[0].c_str());
    return 65;
  }
  Speed zstd, ceiling;
  if (!measure(chunks, threads, reps, Work::kZstd, &zstd) ||
      !measure(chunks, threads, reps, Work::kCeiling, &ceiling)) {
    std::fprintf(stderr, "zstd_bench: a chunk failed to decompress\n");
    return 65;
  }
  std::printf("{\"threads\": %d, \"raw_bytes\": %llu, \"median_raw_mb_per_s\": %.1f, "
              "\"best_raw_mb_per_s\": %.1f, \"ceiling_median_raw_mb_per_s\": %.1f, "
              "\"ceiling_best_raw_mb_per_s\": %.1f",
              threads, static_cast<unsigned long long>(raw_total), zstd.median, zstd.best,
              ceiling.median, ceiling.best);
  if (plain) {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, store->meta().options.level);
    if (store->meta().options.raw_literals) {
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_literalCompressionMode, ZSTD_ps_disable);
    }
    std::vector<Chunk> plain_chunks;
    uint64_t plain_raw = 0, plain_stored = 0;
    agld::DecodedChunk decoded;
    for (size_t k = 0; k < store->chunk_count(); ++k) {
      st = store->read_chunk(k, &decoded, agld::Store::Labels::kRaw);
      if (!st.is_ok()) {
        std::fprintf(stderr, "zstd_bench: %s\n", st.message().c_str());
        return 65;
      }
      const std::vector<std::byte> raw = plain_chunk(decoded);
      std::vector<std::byte> stored(ZSTD_compressBound(raw.size()));
      const size_t n = ZSTD_compress2(cctx, stored.data(), stored.size(), raw.data(), raw.size());
      if (ZSTD_isError(n)) {
        std::fprintf(stderr, "zstd_bench: %s\n", ZSTD_getErrorName(n));
        return 70;
      }
      stored.resize(n);
      plain_raw += raw.size();
      plain_stored += n;
      plain_chunks.push_back({std::move(stored), raw.size(), 0});
    }
    ZSTD_freeCCtx(cctx);
    Speed pz, pc;
    if (!measure(plain_chunks, threads, reps, Work::kZstd, &pz) ||
        !measure(plain_chunks, threads, reps, Work::kCrc, &pc)) {
      std::fprintf(stderr, "zstd_bench: a plain chunk failed to decompress\n");
      return 65;
    }
    std::printf(", \"plain\": {\"raw_bytes\": %llu, \"stored_bytes\": %llu, "
                "\"median_raw_mb_per_s\": %.1f, \"crc_median_raw_mb_per_s\": %.1f}",
                static_cast<unsigned long long>(plain_raw),
                static_cast<unsigned long long>(plain_stored), pz.median, pc.median);
  }
  std::printf("}\n");
  return 0;
}
