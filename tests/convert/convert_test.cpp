// agld convert, through the library: text in, store out, compared with the reference rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "agld/convert.hpp"
#include "agld/store.hpp"
#include "convert/shuffle.hpp"
#include "convert_test_support.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace convert_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::convert_one;
using test::TempDir;

SparseRows read_store(const std::string& path, Store::Labels labels = Store::Labels::kRaw,
                      StoreMeta* meta = nullptr) {
  std::unique_ptr<Store> s;
  Status st = Store::open(path, &s);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  SparseRows all;
  if (!st.is_ok()) return all;
  DecodedChunk c;
  for (size_t k = 0; k < s->chunk_count(); ++k) {
    st = s->read_chunk(k, &c, labels);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    c.append_to(&all);
  }
  if (meta) *meta = s->meta();
  return all;
}

// Options that keep the source's row order (rows are shuffled by default), for tests that
// compare a store with its input row by row.
ConvertOptions kept_order() {
  ConvertOptions opt;
  opt.shuffle = false;
  return opt;
}

// The rows as a sorted list: equal for two matrices that hold the same multiset of rows.
std::vector<std::tuple<double, std::vector<uint32_t>, std::vector<float>>> row_multiset(
    const SparseRows& m) {
  std::vector<std::tuple<double, std::vector<uint32_t>, std::vector<float>>> rows;
  for (size_t r = 0; r < m.rows(); ++r) {
    auto idx = m.row_indices(r);
    auto val = m.row_values(r);
    rows.emplace_back(m.labels[r], std::vector<uint32_t>(idx.begin(), idx.end()),
                      std::vector<float>(val.begin(), val.end()));
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// A matrix whose text is more than 8 MiB, so that several blocks are parsed in parallel.
SparseRows big_matrix(std::mt19937_64& rng, size_t rows = 60000) {
  test::RandomMatrixSpec spec;
  spec.rows = rows;
  spec.features = 100000;
  spec.max_row_nnz = 40;
  spec.long_row_prob = 0.0005;
  return test::random_matrix(spec, rng);
}

TEST(Convert, RoundTripsAcrossChunkingCompressionAndThreads) {
  const uint64_t seed = test::test_seed(99);
  std::mt19937_64 rng(seed);
  TempDir dir;
  SparseRows ref = big_matrix(rng);
  test::write_file(dir.file("in.svm"), test::to_libsvm(ref));
  std::string first_bytes;
  struct Case {
    const char* compression;
    uint64_t chunk_rows, chunk_bytes;
    int threads;
  };
  for (Case c : {Case{"zstd", 65536, 1 << 20, 1}, Case{"zstd", 65536, 1 << 20, 2},
                 Case{"none", 1000, 1 << 20, 2}, Case{"zstd:1", 333, 4096, 2},
                 Case{"zstd:19", 1, 1 << 20, 2}}) {
    if (c.chunk_rows == 1) {
      // One row a chunk: keep it to the first rows to stay fast.
      SparseRows small;
      small.append(ref, 0, 300);
      test::write_file(dir.file("small.svm"), test::to_libsvm(small));
    }
    ConvertOptions opt = kept_order();
    opt.compression = c.compression;
    opt.chunk_rows = c.chunk_rows;
    opt.chunk_bytes = c.chunk_bytes;
    opt.threads = c.threads;
    const std::string in = c.chunk_rows == 1 ? dir.file("small.svm") : dir.file("in.svm");
    Status st = convert_one(in, dir.file("out.agld"), opt);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    StoreMeta m;
    SparseRows back = read_store(dir.file("out.agld"), Store::Labels::kRaw, &m);
    if (c.chunk_rows == 1) {
      SparseRows small;
      small.append(ref, 0, 300);
      EXPECT_EQ(back, small);
      continue;
    }
    EXPECT_EQ(back, ref) << c.compression << " " << c.chunk_rows;
    EXPECT_EQ(m.rows, ref.rows());
    EXPECT_EQ(m.nnz, ref.nnz());
    EXPECT_EQ(m.features, *std::max_element(ref.indices.begin(), ref.indices.end()) + 1u);
    EXPECT_EQ(m.label_kind, LabelKind::kBinary);
    double sq_max = 0, sq_sum = 0;
    uint64_t empty = 0;
    for (size_t r = 0; r < ref.rows(); ++r) {
      double sq = 0;
      for (float v : ref.row_values(r)) sq += double{v} * v;
      sq_max = std::max(sq_max, sq);
      sq_sum += sq;
      empty += ref.offsets[r] == ref.offsets[r + 1];
    }
    EXPECT_EQ(m.row_sq_norm_max, sq_max);
    EXPECT_NEAR(m.row_sq_norm_sum, sq_sum, 1e-9 * sq_sum);
    EXPECT_EQ(m.empty_rows, empty);
    // The store is a function of the input and options, not of threads or timing.
    if (std::string(c.compression) == "zstd") {
      std::string bytes = test::read_file(dir.file("out.agld"));
      if (first_bytes.empty()) {
        first_bytes = bytes;
      } else {
        EXPECT_TRUE(bytes == first_bytes) << "store differs between 1 and 2 threads";
      }
    }
  }
}

TEST(Convert, CompressedInputsAndConcatenatedStreams) {
  std::mt19937_64 rng(test::test_seed(3));
  TempDir dir;
  test::RandomMatrixSpec spec;
  spec.rows = 2000;
  SparseRows a = test::random_matrix(spec, rng), b = test::random_matrix(spec, rng);
  test::write_file(dir.file("a.svm"), test::to_libsvm(a));
  test::write_file(dir.file("b.svm"), test::to_libsvm(b));
  SparseRows both = a;
  both.append(b, 0, b.rows());
  const std::string d = dir.path().string();
  struct Tool {
    const char* name;
    const char* cmd;
  };
  for (Tool t : {Tool{"gz", "gzip -c"}, Tool{"bz2", "bzip2 -c"}, Tool{"xz", "xz -c"}, Tool{"zst", "zstd -q -c"}}) {
    // Two compressed streams back to back, as parallel compressors write them.
    std::string f = d + "/ab." + t.name;
    ASSERT_EQ(test::run_shell(std::string("cd '") + d + "' && " + t.cmd + " a.svm > '" + f + "' && " + t.cmd +
                              " b.svm >> '" + f + "'")
                  .exit_code,
              0);
    Status st = convert_one(f, dir.file("out.agld"), kept_order());
    ASSERT_TRUE(st.is_ok()) << t.name << ": " << st.to_string();
    EXPECT_EQ(read_store(dir.file("out.agld")), both) << t.name;
  }
  // Several inputs are read in order into one store; errors name the file.
  ConvertOptions opt = kept_order();
  opt.inputs = {dir.file("a.svm"), dir.file("b.svm")};
  opt.output = dir.file("two.agld");
  ConvertReport rep;
  ASSERT_TRUE(convert(opt, &rep).is_ok());
  EXPECT_EQ(read_store(dir.file("two.agld")), both);
  test::write_file(dir.file("bad.svm"), "1 1:1\n1 2:x\n");
  opt.inputs = {dir.file("a.svm"), dir.file("bad.svm")};
  Status st = convert(opt, &rep);
  EXPECT_EQ(st.code(), Status::Code::kDataError);
  EXPECT_NE(st.message().find("bad.svm:2:5: expected a numeric value"), std::string::npos) << st.message();
  // A corrupt compressed input is a data error, not a crash.
  std::string gz = test::read_file(dir.path().string() + "/ab.gz");
  gz.resize(gz.size() / 2);
  test::write_file(dir.file("cut.gz"), gz);
  st = convert_one(dir.file("cut.gz"), dir.file("cut.agld"));
  EXPECT_FALSE(st.is_ok());
  EXPECT_FALSE(std::filesystem::exists(dir.file("cut.agld")));
}

TEST(Convert, IndexBaseAndFeatures) {
  TempDir dir;
  test::write_file(dir.file("zero.svm"), "1 0:1 5:2\n-1 3:1\n");
  StoreMeta m;
  ASSERT_TRUE(convert_one(dir.file("zero.svm"), dir.file("z.agld"), kept_order()).is_ok());
  SparseRows z = read_store(dir.file("z.agld"), Store::Labels::kRaw, &m);
  EXPECT_EQ(m.index_base, 0);
  EXPECT_EQ(m.features, 6u);
  EXPECT_EQ(z.indices, (std::vector<uint32_t>{0, 5, 3}));
  ConvertOptions one;
  one.index_base = "1";
  Status st = convert_one(dir.file("zero.svm"), dir.file("o.agld"), one);
  EXPECT_EQ(st.code(), Status::Code::kDataError);
  EXPECT_NE(st.message().find("zero.svm:1:3: feature index 0 in a 1-based file"), std::string::npos)
      << st.message();
  ConvertOptions fixed;
  fixed.features = 100;
  ASSERT_TRUE(convert_one(dir.file("zero.svm"), dir.file("f.agld"), fixed).is_ok());
  read_store(dir.file("f.agld"), Store::Labels::kRaw, &m);
  EXPECT_EQ(m.features, 100u);
  fixed.features = 5;
  st = convert_one(dir.file("zero.svm"), dir.file("f5.agld"), fixed);
  EXPECT_NE(st.message().find("above --features 5"), std::string::npos) << st.message();
}

TEST(Convert, LabelKinds) {
  TempDir dir;
  StoreMeta m;
  test::write_file(dir.file("01.svm"), "0 1:1\n1 2:1\n1 3:1\n");
  ASSERT_TRUE(convert_one(dir.file("01.svm"), dir.file("01.agld"), kept_order()).is_ok());
  SparseRows mapped = read_store(dir.file("01.agld"), Store::Labels::kMapped, &m);
  EXPECT_EQ(m.label_kind, LabelKind::kBinary);
  EXPECT_EQ(mapped.labels, (std::vector<double>{-1, 1, 1}));
  EXPECT_EQ(m.label_counts, (std::vector<std::pair<double, uint64_t>>{{0, 1}, {1, 2}}));

  test::write_file(dir.file("12.svm"), "1 1:1\n2 2:1\n2 3:1\n");
  ASSERT_TRUE(convert_one(dir.file("12.svm"), dir.file("12.agld"), kept_order()).is_ok());
  mapped = read_store(dir.file("12.agld"), Store::Labels::kMapped, &m);
  EXPECT_EQ(m.label_positive, 2);
  EXPECT_EQ(mapped.labels, (std::vector<double>{-1, 1, 1}));

  test::write_file(dir.file("3.svm"), "1 1:1\n0 2:1\n-1 3:1\n");
  ASSERT_TRUE(convert_one(dir.file("3.svm"), dir.file("3.agld"), kept_order()).is_ok());
  read_store(dir.file("3.agld"), Store::Labels::kMapped, &m);
  EXPECT_EQ(m.label_kind, LabelKind::kReal);
  EXPECT_EQ(m.label_min, -1);
  EXPECT_EQ(m.label_max, 1);

  ConvertOptions binary;
  binary.task = "binary";
  Status st = convert_one(dir.file("3.svm"), dir.file("3b.agld"), binary);
  EXPECT_EQ(st.code(), Status::Code::kDataError);
  EXPECT_NE(st.message().find("3.svm:3: label -1 makes the label set {-1, 0, 1}"), std::string::npos)
      << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir.file("3b.agld")));

  ConvertOptions regression = kept_order();
  regression.task = "regression";
  ASSERT_TRUE(convert_one(dir.file("01.svm"), dir.file("r.agld"), regression).is_ok());
  SparseRows raw = read_store(dir.file("r.agld"), Store::Labels::kMapped, &m);
  EXPECT_EQ(m.label_kind, LabelKind::kReal);
  EXPECT_EQ(raw.labels, (std::vector<double>{0, 1, 1}));
}

TEST(Convert, SkipBadLinesCountsAndReports) {
  TempDir dir;
  test::write_file(dir.file("s.svm"), "1 1:1\n1 0:1\nx 2:1\n-1 2:1\n1 3:nan\n");
  ConvertOptions opt;
  opt.inputs = {dir.file("s.svm")};
  opt.output = dir.file("s.agld");
  opt.skip_bad_lines = true;
  opt.index_base = "1";
  ConvertReport rep;
  ASSERT_TRUE(convert(opt, &rep).is_ok());
  EXPECT_EQ(rep.rows, 2u);
  EXPECT_EQ(rep.skipped_lines, 3u);
  ASSERT_EQ(rep.skipped_examples.size(), 3u);
  EXPECT_NE(rep.skipped_examples[1].find("s.svm:3:1"), std::string::npos) << rep.skipped_examples[1];
  StoreMeta m;
  read_store(dir.file("s.agld"), Store::Labels::kRaw, &m);
  EXPECT_EQ(m.skipped_lines, 3u);
}

// The default: a seeded random order, the same store whatever the threads and whether the
// shuffle fits in memory or spills; --keep-order (shuffle = false) keeps the source's order.
TEST(Convert, ShufflesByDefault) {
  const uint64_t seed = test::test_seed(31);
  std::mt19937_64 rng(seed);
  TempDir dir;
  SparseRows ref = big_matrix(rng, 150000);  // ~25 MiB of text; spills at --memory 64M
  test::write_file(dir.file("in.svm"), test::to_libsvm(ref));
  const auto ref_rows = row_multiset(ref);
  struct Case {
    int threads;
    uint64_t memory;
    bool spills;
  };
  std::string first_bytes;
  for (Case c : {Case{1, uint64_t{1} << 30, false}, Case{2, uint64_t{1} << 30, false},
                 Case{2, 64 << 20, true}, Case{1, 64 << 20, true}}) {
    SCOPED_TRACE(std::to_string(c.threads) + " threads, memory " + std::to_string(c.memory));
    ConvertOptions opt;  // the defaults, but for threads and memory
    opt.inputs = {dir.file("in.svm")};
    opt.output = dir.file("out.agld");
    opt.threads = c.threads;
    opt.memory = c.memory;
    opt.temp_dir = dir.file("spill");
    std::filesystem::create_directory(opt.temp_dir);
    ConvertReport rep;
    Status st = convert(opt, &rep);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(rep.shuffle_runs > 0, c.spills) << rep.shuffle_runs << " runs spilled";
    if (c.spills) {
      EXPECT_GT(rep.shuffle_disk_bytes, ref.nnz() * 8);
    }
    EXPECT_TRUE(test::list_dir(opt.temp_dir).empty()) << "a temporary run was left behind";
    StoreMeta m;
    SparseRows back = read_store(opt.output, Store::Labels::kRaw, &m);
    EXPECT_TRUE(rows_shuffled(m));
    EXPECT_TRUE(m.options.shuffle);
    EXPECT_EQ(m.options.seed, 0u);
    ASSERT_EQ(back.rows(), ref.rows());
    EXPECT_NE(back.labels, ref.labels) << "the rows kept their order";
    EXPECT_TRUE(row_multiset(back) == ref_rows) << "not the same rows";
    const std::string bytes = test::read_file(opt.output);
    if (first_bytes.empty()) {
      first_bytes = bytes;
    } else {
      EXPECT_TRUE(bytes == first_bytes) << "the store depends on threads or memory";
    }
  }
  // Another seed, another order.
  ConvertOptions other;
  other.seed = 1;
  ASSERT_TRUE(convert_one(dir.file("in.svm"), dir.file("seed1.agld"), other).is_ok());
  StoreMeta m;
  SparseRows seed1 = read_store(dir.file("seed1.agld"), Store::Labels::kRaw, &m);
  EXPECT_EQ(m.options.seed, 1u);
  EXPECT_NE(seed1, read_store(dir.file("out.agld")));
  EXPECT_TRUE(row_multiset(seed1) == ref_rows);
  // Kept order: the input as it was.
  ASSERT_TRUE(convert_one(dir.file("in.svm"), dir.file("kept.agld"), kept_order()).is_ok());
  EXPECT_EQ(read_store(dir.file("kept.agld"), Store::Labels::kRaw, &m), ref);
  EXPECT_FALSE(rows_shuffled(m));
  EXPECT_FALSE(m.options.shuffle);
}

// A store written before shuffling was the default (or through StoreWriter with the default
// options) reports its order as kept.
TEST(Convert, StoreWriterDefaultsToKeptOrder) {
  TempDir dir;
  std::mt19937_64 rng(1);
  test::RandomMatrixSpec spec;
  spec.rows = 50;
  ASSERT_TRUE(test::write_store(dir.file("old.agld"), test::random_matrix(spec, rng), 20, ChunkCodec{},
                                uint64_t{1000})
                  .is_ok());
  StoreMeta m;
  read_store(dir.file("old.agld"), Store::Labels::kRaw, &m);
  EXPECT_FALSE(rows_shuffled(m));
  m.options.shuffle = true;
  EXPECT_TRUE(rows_shuffled(m));
}

TEST(Convert, MemoryTooSmallToShuffle) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), "1 1:1\n-1 2:1\n");
  ConvertOptions opt;
  opt.memory = 32 << 20;
  Status st = convert_one(dir.file("in.svm"), dir.file("out.agld"), opt);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--memory must be at least 64M"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--keep-order"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.agld")));
  opt.shuffle = false;  // needs no memory of its own
  EXPECT_TRUE(convert_one(dir.file("in.svm"), dir.file("out.agld"), opt).is_ok());
  opt.shuffle = true;
  opt.memory = 64 << 20;
  opt.temp_dir = dir.file("nowhere");
  st = convert_one(dir.file("in.svm"), dir.file("out2.agld"), opt);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--temp-dir"), std::string::npos) << st.message();
}

std::vector<double> row_ids(const SparseRows& rows) { return rows.labels; }

TEST(Convert, ShuffleIsASeededPermutation) {
  const uint64_t seed = test::test_seed(11);
  TempDir dir;
  // Label each row with its number, so the permutation can be read back.
  SparseRows ref;
  std::mt19937_64 rng(seed);
  for (int r = 0; r < 5000; ++r) {
    std::vector<uint32_t> idx{static_cast<uint32_t>(rng() % 100)};
    std::vector<float> val{static_cast<float>(r)};
    ref.add_row(r, idx, val);
  }
  test::write_file(dir.file("in.svm"), test::to_libsvm(ref));
  auto shuffled = [&](uint64_t s, int threads) {
    ConvertOptions opt;
    opt.shuffle = true;
    opt.seed = s;
    opt.threads = threads;
    opt.chunk_rows = 700;
    EXPECT_TRUE(convert_one(dir.file("in.svm"), dir.file("sh.agld"), opt).is_ok());
    return read_store(dir.file("sh.agld"));
  };
  SparseRows a = shuffled(seed, 1);
  std::vector<double> ids = row_ids(a);
  std::vector<double> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, ref.labels) << "not a permutation";
  EXPECT_NE(ids, ref.labels);
  // Each row keeps its own entries.
  for (size_t r = 0; r < a.rows(); ++r) ASSERT_EQ(a.row_values(r)[0], static_cast<float>(a.labels[r]));
  EXPECT_EQ(row_ids(shuffled(seed, 2)), ids) << "the order depends on threads";
  EXPECT_NE(row_ids(shuffled(seed + 1, 2)), ids) << "the seed has no effect";
  // Uniformity, roughly: the mean position of the first half of rows is near the middle.
  double mean_pos = 0;
  for (size_t p = 0; p < ids.size(); ++p) {
    if (ids[p] < 2500) mean_pos += static_cast<double>(p) / 2500.0;
  }
  // sd of the mean of 2500 positions drawn without replacement from 5000: ~ 5000/sqrt(12*2500*2)
  EXPECT_NEAR(mean_pos, 2499.5, 5 * 5000 / std::sqrt(12.0 * 2500 * 2));
}

TEST(Convert, ExternalShuffleMatchesInMemoryShuffle) {
  const uint64_t seed = test::test_seed(21);
  std::mt19937_64 rng(seed);
  TempDir dir;
  test::RandomMatrixSpec spec;
  spec.rows = 20000;
  SparseRows ref = test::random_matrix(spec, rng);
  struct Spilled {
    uint64_t runs = 0, merges = 0, peak_disk = 0;
    size_t open_runs = 0, fan_in = 0;
  };
  auto run = [&](uint64_t memory, Spilled* spilled) {
    ExternalShuffler sh(seed, memory, dir.path().string());
    for (size_t r = 0; r < ref.rows(); ++r) {
      EXPECT_TRUE(sh.add(ref, r, r).is_ok());
      // Runs are merged a level at a time: never more than fan_in() of a level at once.
      spilled->open_runs = std::max(spilled->open_runs, sh.open_runs());
    }
    EXPECT_TRUE(sh.finish().is_ok());
    EXPECT_LE(sh.open_runs(), sh.fan_in()) << "the last merge takes more than fan_in() runs";
    // The spill files are anonymous: nothing is in the directory, even while they exist.
    EXPECT_TRUE(test::list_dir(dir.path()).empty());
    SparseRows out;
    bool done = false;
    while (!done) EXPECT_TRUE(sh.next(&out, 997, 1 << 20, &done).is_ok());
    spilled->runs = sh.runs();
    spilled->merges = sh.merges();
    spilled->peak_disk = sh.peak_disk_bytes();
    spilled->fan_in = sh.fan_in();
    return out;
  };
  Spilled mem, disk, deep;
  SparseRows in_memory = run(uint64_t{1} << 30, &mem);
  SparseRows external = run(256 << 10, &disk);
  SparseRows two_levels = run(100 << 10, &deep);
  EXPECT_EQ(mem.runs, 0u);
  EXPECT_EQ(mem.peak_disk, 0u);
  EXPECT_EQ(disk.fan_in, 8u);
  EXPECT_GT(disk.runs, 2 * disk.fan_in);
  EXPECT_GT(disk.merges, 0u);
  EXPECT_LT(disk.open_runs, 2 * disk.fan_in);
  EXPECT_GT(deep.runs, deep.fan_in * deep.fan_in) << "no run of the second level";
  EXPECT_LT(deep.open_runs, 3 * deep.fan_in);
  // Every row was on disk, in a run or two at once while they were merged.
  EXPECT_GT(disk.peak_disk, 8 * ref.nnz());
  EXPECT_LT(disk.peak_disk, 2 * (20 * ref.rows() + 8 * ref.nnz()) + 1);
  EXPECT_EQ(in_memory.rows(), ref.rows());
  EXPECT_EQ(external, in_memory);
  EXPECT_EQ(two_levels, in_memory);
  EXPECT_TRUE(test::list_dir(dir.path()).empty());
}

// A temporary directory that cannot take runs: an I/O error naming it, not a crash.
TEST(Convert, ExternalShuffleReportsATemporaryDirectoryItCannotUse) {
  std::mt19937_64 rng(4);
  test::RandomMatrixSpec spec;
  spec.rows = 5000;
  SparseRows ref = test::random_matrix(spec, rng);
  TempDir dir;
  ExternalShuffler sh(1, 64 << 10, dir.file("missing"));
  Status st;
  for (size_t r = 0; r < ref.rows() && st.is_ok(); ++r) st = sh.add(ref, r, r);
  if (st.is_ok()) st = sh.finish();
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_NE(st.message().find("cannot create a temporary run in " + dir.file("missing")), std::string::npos)
      << st.message();
}

TEST(Convert, TestSplitIsSeededDisjointAndSharesFeatures) {
  const uint64_t seed = test::test_seed(5);
  TempDir dir;
  SparseRows ref;
  std::mt19937_64 rng(seed);
  const int n = 20000;
  for (int r = 0; r < n; ++r) {
    std::vector<uint32_t> idx{static_cast<uint32_t>(r % 1000), static_cast<uint32_t>(1000 + r)};
    std::vector<float> val{1, static_cast<float>(r)};
    ref.add_row(r % 2, idx, val);
  }
  test::write_file(dir.file("in.svm"), test::to_libsvm(ref));
  for (bool shuffle : {false, true}) {
    ConvertOptions opt;
    opt.inputs = {dir.file("in.svm")};
    opt.output = dir.file("train.agld");
    opt.test_output = dir.file("test.agld");
    opt.test_fraction = 0.2;
    opt.seed = seed;
    opt.shuffle = shuffle;
    ConvertReport rep;
    Status st = convert(opt, &rep);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    StoreMeta mtrain, mtest;
    SparseRows train = read_store(dir.file("train.agld"), Store::Labels::kRaw, &mtrain);
    SparseRows test_rows = read_store(dir.file("test.agld"), Store::Labels::kRaw, &mtest);
    EXPECT_EQ(train.rows() + test_rows.rows(), static_cast<size_t>(n));
    EXPECT_EQ(rep.test_rows, test_rows.rows());
    // Binomial(n, 0.2): sd = sqrt(n * 0.2 * 0.8) ~ 57.
    EXPECT_NEAR(static_cast<double>(test_rows.rows()), 0.2 * n, 5 * std::sqrt(n * 0.2 * 0.8));
    std::set<float> ids;
    for (size_t r = 0; r < train.rows(); ++r) ids.insert(train.row_values(r)[1]);
    for (size_t r = 0; r < test_rows.rows(); ++r) {
      EXPECT_EQ(ids.count(test_rows.row_values(r)[1]), 0u) << "a row is in both stores";
      ids.insert(test_rows.row_values(r)[1]);
    }
    EXPECT_EQ(ids.size(), static_cast<size_t>(n));
    EXPECT_EQ(mtrain.features, mtest.features);
    EXPECT_EQ(mtrain.features, 1000u + n);
    EXPECT_EQ(mtrain.options.part, "train");
    EXPECT_EQ(mtest.options.part, "test");
    EXPECT_EQ(mtrain.label_kind, LabelKind::kBinary);
    EXPECT_EQ(mtest.label_kind, LabelKind::kBinary);
    // Both stores are shuffled, or both kept in the source's order (the row number is the
    // second value).
    for (const auto* part : {&train, &test_rows}) {
      std::vector<float> numbers;
      for (size_t r = 0; r < part->rows(); ++r) numbers.push_back(part->row_values(r)[1]);
      EXPECT_EQ(std::is_sorted(numbers.begin(), numbers.end()), !shuffle);
    }
    EXPECT_EQ(rows_shuffled(mtrain), shuffle);
    EXPECT_EQ(rows_shuffled(mtest), shuffle);
    EXPECT_EQ(mtest.options.seed, seed);
  }
}

}  // namespace convert_test
}  // namespace
}  // namespace agld
