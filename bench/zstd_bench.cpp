// zstd_bench STORE [THREADS] [REPS]: zstd's own decompression speed on a store's chunks,
// with nothing else (no checksum, no checks, no unshuffling, no I/O: the stored bytes are
// copied into memory first). THREADS threads take chunks from a shared counter, each into
// a buffer of its own. Prints the median and best raw MB/s over REPS passes: the purest
// form of scan_bench's decompression limit.
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "agld/store.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: zstd_bench STORE [THREADS] [REPS]\n");
    return 64;
  }
  const int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1;
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  std::unique_ptr<agld::Store> store;
  agld::Status st = agld::Store::open(argv[1], &store);
  if (!st.is_ok()) {
    std::fprintf(stderr, "zstd_bench: %s\n", st.message().c_str());
    return 66;
  }
  struct Chunk {
    std::vector<std::byte> stored;
    size_t raw;
  };
  std::vector<Chunk> chunks;
  uint64_t raw_total = 0, max_raw = 0;
  for (size_t k = 0; k < store->chunk_count(); ++k) {
    const agld::ChunkInfo& c = store->chunk(k);
    if (c.codec != agld::Codec::kZstd) continue;
    agld::ByteSpan view;
    st = store->file().view(c.offset, c.stored_size, &view);
    if (!st.is_ok()) {
      std::fprintf(stderr, "zstd_bench: %s\n", st.message().c_str());
      return 74;
    }
    chunks.push_back({std::vector<std::byte>(view.begin(), view.end()), c.raw_size});
    raw_total += c.raw_size;
    max_raw = std::max<uint64_t>(max_raw, c.raw_size);
  }
  if (chunks.empty()) {
    std::fprintf(stderr, "zstd_bench: no zstd chunks in %s\n", argv[1]);
    return 65;
  }
  std::vector<double> mbps;
  for (int r = 0; r < reps; ++r) {
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        ZSTD_DCtx* ctx = ZSTD_createDCtx();
        std::vector<std::byte> out(max_raw);
        for (size_t k; (k = next.fetch_add(1)) < chunks.size();) {
          const size_t n = ZSTD_decompressDCtx(ctx, out.data(), chunks[k].raw,
                                               chunks[k].stored.data(), chunks[k].stored.size());
          if (ZSTD_isError(n) || n != chunks[k].raw) failed = true;
        }
        ZSTD_freeDCtx(ctx);
      });
    }
    for (std::thread& t : pool) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (failed) {
      std::fprintf(stderr, "zstd_bench: a chunk failed to decompress\n");
      return 65;
    }
    mbps.push_back(static_cast<double>(raw_total) / 1e6 / s);
  }
  std::sort(mbps.begin(), mbps.end());
  std::printf("{\"threads\": %d, \"raw_bytes\": %llu, \"median_raw_mb_per_s\": %.1f, "
              "\"best_raw_mb_per_s\": %.1f}\n",
              threads, static_cast<unsigned long long>(raw_total), mbps[mbps.size() / 2],
              mbps.back());
  return 0;
}
