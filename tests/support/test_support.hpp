// Helpers shared by the tests: scratch directories, running the agld binary, random data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "agld/sparse.hpp"
#include "agld/status.hpp"
#include "agld/store.hpp"

// The sanitizer this build runs under that makes the process's resident set say nothing
// about agld's own memory (shadow memory, quarantined frees, its own allocator), or nullptr:
// "AddressSanitizer" or "ThreadSanitizer" (scripts/sanitize.sh builds with both). Told by the
// build (AGLD_TEST_ASAN, AGLD_TEST_TSAN: tests/CMakeLists.txt), not by the compiler, since the
// ASan build compiles the test files themselves without it.
#if defined(AGLD_TEST_ASAN)
#define AGLD_TEST_MEMORY_SANITIZER "AddressSanitizer"
#elif defined(AGLD_TEST_TSAN)
#define AGLD_TEST_MEMORY_SANITIZER "ThreadSanitizer"
#endif

// A test that measures memory (resident set, peak RSS) skips itself under those sanitizers,
// saying why. Use at the top of the test body (GoogleTest's GTEST_SKIP).
#ifdef AGLD_TEST_MEMORY_SANITIZER
#define AGLD_SKIP_IF_MEMORY_SANITIZED()                                                          \
  GTEST_SKIP() << "measures the process's memory, which " AGLD_TEST_MEMORY_SANITIZER            \
                  " inflates (shadow memory, quarantine); run it in the normal build"
#else
#define AGLD_SKIP_IF_MEMORY_SANITIZED() static_cast<void>(0)
#endif

namespace agld::test {

// Built with ASan or TSan: a test that repeats one path many times (kills at random moments)
// may repeat it fewer times there, and a suite over a cross product of registries may take
// each registry's values once (sampler_test_support.hpp, method_each), since a sanitizer looks
// for memory errors and races in code paths, which the repetitions and combinations add few of.
#ifdef AGLD_TEST_MEMORY_SANITIZER
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// A fresh directory under $AGLD_TEST_TMP (or the system temp dir), removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the agld binary with a shell-quoted argument string; stdin from /dev/null unless
// given. Captures stdout and stderr.
RunResult run_agld(const std::string& args, const std::string& stdin_file = "");
// Runs any shell command, capturing its output.
RunResult run_shell(const std::string& command);

// A path or argument single-quoted for run_agld's shell command line.
inline std::string shell_arg(const std::string& s) { return "'" + s + "'"; }
// The shipped heart_scale dataset (datasets/).
inline std::string heart_scale_svm() { return std::string(AGLD_SOURCE_DIR) + "/datasets/heart_scale.svm"; }

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& contents);
// Lists the entries of a directory (names only), sorted.
std::vector<std::string> list_dir(const std::filesystem::path& dir);

// A seed for a statistical or property test: $AGLD_TEST_SEED if set, else the given
// default. Printed so that a failure can be reproduced.
uint64_t test_seed(uint64_t default_seed);

struct RandomMatrixSpec {
  size_t rows = 100;
  uint32_t features = 1000;
  size_t max_row_nnz = 50;      // rows have 0..max_row_nnz entries (some get many more)
  double empty_row_prob = 0.1;  // chance that a row is empty
  double long_row_prob = 0.01;  // chance that a row has thousands of entries
  bool binary_values = false;   // every value 1
  bool binary_labels = true;    // labels +1/-1, else real
};
SparseRows random_matrix(const RandomMatrixSpec& spec, std::mt19937_64& rng);

// Writes rows as a store of chunk_rows-row chunks with the given codec and metadata (rows
// and nnz are filled in by the writer).
Status write_store(const std::string& path, const SparseRows& rows, size_t chunk_rows,
                   const ChunkCodec& codec, const StoreMeta& meta);
// The same with real-label metadata of d = features.
Status write_store(const std::string& path, const SparseRows& rows, size_t chunk_rows,
                   const ChunkCodec& codec, uint64_t features);

// The per-feature statistics of rows by brute force, row after row: for each of d features
// the entries where it is stored, the sum of double(x)^2 over them and the largest |x|.
struct BruteFeatureStats {
  std::vector<uint64_t> count;
  std::vector<double> sum_sq;
  std::vector<float> max_abs;
};
BruteFeatureStats brute_feature_stats(const SparseRows& rows, uint64_t features);
// A value of the kinds that stress per-feature statistics, picked by c in [0, 1): a stored
// zero, 1, a negative, a tiny (1e-20) or huge (1e15) one, or an ordinary one; its size comes
// from one uniform draw of rng (none for 0 and 1).
float awkward_value(double c, std::mt19937_64& rng);
// write_store that records rows' statistics (brute_feature_stats, in blocks of
// block_features): what `agld convert` writes.
Status write_store_with_stats(const std::string& path, const SparseRows& rows, size_t chunk_rows,
                              const ChunkCodec& codec, const StoreMeta& meta,
                              uint32_t block_features);

// LIBSVM text (1-based indices) for rows, shortest round-trip formatting.
std::string to_libsvm(const SparseRows& rows);

// The pages of a file resident in the page cache (mincore), through a mapping of its own
// that is never touched.
class Residency {
 public:
  explicit Residency(const std::string& path);
  ~Residency();
  Residency(const Residency&) = delete;
  Residency& operator=(const Residency&) = delete;
  bool ok() const;
  uint64_t bytes();  // resident bytes now (the whole file if mincore fails)

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  void* map_;
  std::vector<unsigned char> vec_;
};

}  // namespace agld::test
