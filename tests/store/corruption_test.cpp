// Robustness of the store reader against damaged files (docs/format.md, "A reader checks"):
// every flipped byte and every truncation must come back as a one-line Status that names
// the damaged region (and the chunk, when the damage is in a chunk's stored bytes), never a
// crash or a SIGBUS. Also crafted stores whose checksums are right but whose contents are
// not, wrong magic and newer versions, and the CLI's exit codes and one-line errors.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "agld/convert.hpp"
#include "agld/feature_stats.hpp"
#include "agld/store.hpp"
#include "../file/fault_fs.hpp"
#include "store/crc32c.hpp"
#include "store/format.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace corruption_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::FaultFileSystem;
using test::TempDir;

constexpr size_t kHeader = 16, kFooter = 64, kEntry = 40;

// ---------------------------------------------------------------- building stores

StoreMeta binary_meta(uint64_t features) {
  StoreMeta m;
  m.features = features;
  m.label_kind = LabelKind::kBinary;
  m.label_positive = 1;
  m.created_by = "corruption_test";
  return m;
}

// Writes rows as a store of chunk_rows-row chunks. Fails the test on error.
void write_store(const std::string& path, const SparseRows& rows, size_t chunk_rows, Codec codec,
                 uint64_t features) {
  Status st = test::write_store(path, rows, chunk_rows, ChunkCodec{codec}, binary_meta(features));
  ASSERT_TRUE(st.is_ok()) << st.to_string();
}

SparseRows small_matrix(size_t rows, bool binary_values, uint64_t seed) {
  test::RandomMatrixSpec spec;
  spec.rows = rows;
  spec.features = 300;
  spec.max_row_nnz = 12;
  spec.long_row_prob = 0;
  spec.binary_values = binary_values;
  std::mt19937_64 rng(seed);
  return test::random_matrix(spec, rng);
}

std::vector<std::byte> bytes_of(const std::string& path) {
  std::string s = test::read_file(path);
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

void write_bytes(const std::string& path, const std::vector<std::byte>& b, size_t n) {
  test::write_file(path, std::string(reinterpret_cast<const char*>(b.data()), n));
}
void write_bytes(const std::string& path, const std::vector<std::byte>& b) {
  write_bytes(path, b, b.size());
}

// Where things are in a (good) store's bytes, decoded independently of the reader. With
// feature statistics, the metadata region holds the JSON text and its NUL up to stats_begin,
// then the statistics' blocks and table up to stats_end, then their trailer.
struct Layout {
  uint64_t size = 0, meta_offset = 0, meta_size = 0, index_offset = 0, chunk_count = 0;
  std::vector<uint64_t> chunk_offset, chunk_size;
  bool stats = false;
  uint64_t stats_begin = 0, stats_end = 0;
};

Layout layout_of(const std::vector<std::byte>& b) {
  Layout l;
  l.size = b.size();
  const std::byte* ft = b.data() + b.size() - kFooter;
  l.meta_offset = format::get<uint64_t>(ft + 0);
  l.meta_size = format::get<uint64_t>(ft + 8);
  l.index_offset = format::get<uint64_t>(ft + 16);
  l.chunk_count = format::get<uint64_t>(ft + 24);
  for (uint64_t k = 0; k < l.chunk_count; ++k) {
    const std::byte* e = b.data() + l.index_offset + k * kEntry;
    l.chunk_offset.push_back(format::get<uint64_t>(e + 0));
    l.chunk_size.push_back(format::get<uint32_t>(e + 16));
  }
  const std::byte* trailer = b.data() + l.index_offset - 64;
  if (l.meta_size > 64 && format::get<uint64_t>(trailer + 56) == 0x31545346444C4741ull) {
    l.stats = true;
    l.stats_begin = l.meta_offset + format::get<uint64_t>(trailer + 0) + 1;
    l.stats_end = l.index_offset - 64;
  }
  return l;
}

// The chunk whose stored bytes hold offset, or -1.
int chunk_at(const Layout& l, uint64_t off) {
  for (size_t k = 0; k < l.chunk_count; ++k) {
    if (off >= l.chunk_offset[k] && off < l.chunk_offset[k] + l.chunk_size[k]) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

// What an error about damage at offset must mention.
std::string region_word(const Layout& l, uint64_t off) {
  if (off < kHeader) return "header";
  if (int k = chunk_at(l, off); k >= 0) return "chunk " + std::to_string(k) + " (";
  if (l.stats && off >= l.stats_begin && off < l.stats_end) return "feature statistics";
  if (off >= l.meta_offset && off < l.meta_offset + l.meta_size) return "metadata";
  if (off >= l.index_offset && off < l.size - kFooter) return "chunk index";
  return "footer";
}

// Opens the store, reads every chunk in order, then its feature statistics if it has them;
// stops at the first failure and says where (-1: at open or in the statistics).
Status open_and_read_all(const std::string& path, FileSystem& fs, int* failed_chunk,
                         size_t* chunks = nullptr) {
  *failed_chunk = -1;
  std::unique_ptr<Store> s;
  AGLD_RETURN_IF_ERROR(Store::open(path, &s, fs));
  if (chunks) *chunks = s->chunk_count();
  DecodedChunk c;
  for (size_t k = 0; k < s->chunk_count(); ++k) {
    Status st = s->read_chunk(k, &c, k % 2 ? Store::Labels::kRaw : Store::Labels::kMapped);
    if (!st.is_ok()) {
      *failed_chunk = static_cast<int>(k);
      return st;
    }
  }
  if (!has_feature_stats(*s)) return Status::ok();
  return scan_feature_stats(*s, [](const FeatureStatsBlock&) { return Status::ok(); }, nullptr, 7);
}

// Problems with one damaged copy, or "" when it was reported as it should be.
std::string judge(const std::string& path, const Layout& l, uint64_t off, const Status& st,
                  int failed_chunk) {
  if (st.is_ok()) return "accepted";
  if (st.code() != Status::Code::kCorruption) return "code is not corruption: " + st.to_string();
  const std::string& m = st.message();
  if (m.find('\n') != std::string::npos) return "message is not one line: " + m;
  if (m.rfind(path + ": ", 0) != 0) return "message does not start with the path: " + m;
  const int k = chunk_at(l, off);
  if (k != failed_chunk) {
    return "failed at chunk " + std::to_string(failed_chunk) + " (-1: open), expected " +
           std::to_string(k) + ": " + m;
  }
  const std::string word = region_word(l, off);
  if (m.find(word) == std::string::npos) return "message does not mention '" + word + "': " + m;
  return "";
}

// Flips bytes of the store one at a time (every byte outside the chunks; inside them every
// chunk_stride-th byte plus each chunk's first and last) with two masks each, and checks
// that every flip is reported. Returns the number of flips tried.
size_t check_flips(const std::string& path, size_t chunk_stride) {
  const std::vector<std::byte> good = bytes_of(path);
  const Layout l = layout_of(good);
  {
    int fc;
    Status st = open_and_read_all(path, FileSystem::local(), &fc);
    EXPECT_TRUE(st.is_ok()) << "the undamaged store must read: " << st.to_string();
    if (!st.is_ok()) return 0;
  }
  FaultFileSystem fs;
  size_t tried = 0, bad = 0;
  for (uint64_t off = 0; off < good.size(); ++off) {
    const int k = chunk_at(l, off);
    if (k >= 0 && chunk_stride > 1 && off % chunk_stride != 0 &&
        off != l.chunk_offset[static_cast<size_t>(k)] &&
        off + 1 != l.chunk_offset[static_cast<size_t>(k)] + l.chunk_size[static_cast<size_t>(k)]) {
      continue;
    }
    // The statistics section is sampled like a chunk: every stride-th byte, its first and last.
    if (l.stats && chunk_stride > 1 && off >= l.stats_begin && off < l.stats_end &&
        off % chunk_stride != 0 && off != l.stats_begin && off + 1 != l.stats_end) {
      continue;
    }
    for (uint8_t mask : {uint8_t{0xFF}, static_cast<uint8_t>(1u << (off % 8))}) {
      fs.flips = {{off, mask}};
      int failed_chunk;
      Status st = open_and_read_all(path, fs, &failed_chunk);
      ++tried;
      std::string why = judge(path, l, off, st, failed_chunk);
      if (!why.empty() && ++bad <= 20) {
        ADD_FAILURE() << path << ": byte " << off << " (of " << good.size() << ", region '"
                      << region_word(l, off) << "') xor 0x" << std::hex << int{mask} << std::dec
                      << ": " << why;
      }
    }
  }
  EXPECT_EQ(bad, 0u) << "damaged copies not reported properly";
  return tried;
}

// Truncations every stride bytes (and every byte of the last 64) through the fault FS, and
// of a real file (cut with truncate(2), read with the local, memory-mapping FS) every
// real_stride bytes and every byte of the first and last 100; real_stride 0: none.
void check_truncations(const std::string& path, size_t stride, size_t real_stride) {
  const std::vector<std::byte> good = bytes_of(path);
  TempDir dir;
  const std::string cut = dir.file("cut.agld");
  write_bytes(cut, good);
  FaultFileSystem fs;
  size_t bad = 0;
  auto check = [&](uint64_t n, bool real) {
    int failed_chunk;
    Status st;
    std::string p = path;
    if (real) {
      if (::truncate(cut.c_str(), static_cast<off_t>(n)) != 0) {
        ADD_FAILURE() << "truncate " << cut;
        return;
      }
      p = cut;
      st = open_and_read_all(cut, FileSystem::local(), &failed_chunk);
    } else {
      fs.truncate_to = n;
      st = open_and_read_all(path, fs, &failed_chunk);
    }
    std::string why;
    if (st.is_ok()) {
      why = "accepted";
    } else if (st.code() != Status::Code::kCorruption) {
      why = "code is not corruption: " + st.to_string();
    } else if (failed_chunk != -1) {
      why = "not caught at open: " + st.message();
    } else if ((st.message().find("truncated") == std::string::npos &&
                !(n < 8 && st.message().find("not an agld store") != std::string::npos)) ||
               st.message().rfind(p + ": ", 0) != 0 ||
               st.message().find('\n') != std::string::npos) {
      why = "message should be one line, start with the path and say 'truncated' (or, for "
            "fewer bytes than the magic, 'not an agld store'): " +
            st.message();
    }
    if (!why.empty() && ++bad <= 20) {
      ADD_FAILURE() << path << " cut to " << n << " of " << good.size() << " bytes"
                    << (real ? " (real file)" : " (fault fs)") << ": " << why;
    }
  };
  for (uint64_t n = 0; n < good.size(); n += (n + 64 < good.size() ? stride : 1)) check(n, false);
  if (real_stride > 0) {
    // Shrinking one file step by step: each cut is a fresh open of a shorter file.
    for (uint64_t n = good.size(); n-- > 0;) {
      if (n < 100 || n + 100 >= good.size() || n % real_stride == 0) check(n, true);
    }
  }
  EXPECT_EQ(bad, 0u);
}

// A store written by StoreWriter, with several chunks, and with feature statistics in
// blocks of 64 features (300 features: 5 blocks) or none.
struct SmallStore {
  const char* name;
  Codec codec;
  bool binary_values;
  bool stats = false;
};

void PrintTo(const SmallStore& s, std::ostream* os) { *os << s.name; }

class StoreCorruption : public ::testing::TestWithParam<SmallStore> {
 protected:
  void SetUp() override {
    path_ = dir_.file(std::string(GetParam().name) + ".agld");
    SparseRows rows = small_matrix(90, GetParam().binary_values, 17);
    if (GetParam().stats) {
      StoreMeta m = binary_meta(300);
      m.options.compression = GetParam().codec == Codec::kNone ? "none" : "zstd";
      Status st = test::write_store_with_stats(path_, rows, 20, ChunkCodec{GetParam().codec}, m, 64);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_TRUE(layout_of(bytes_of(path_)).stats);
    } else {
      write_store(path_, rows, 20, GetParam().codec, 300);
    }
  }
  TempDir dir_;
  std::string path_;
};

TEST_P(StoreCorruption, EveryFlippedByteIsReportedWithItsRegion) {
  const std::vector<std::byte> good = bytes_of(path_);
  const Layout l = layout_of(good);
  ASSERT_EQ(l.chunk_count, 5u);
  ASSERT_LT(good.size(), 40000u);  // small enough to flip every byte
  const size_t tried = check_flips(path_, 1);
  EXPECT_EQ(tried, 2 * good.size());
}

TEST_P(StoreCorruption, EveryTruncationIsReported) {
  check_truncations(path_, 1, /*real_stride=*/1);
}

TEST_P(StoreCorruption, TrailingOrMissingBytesAreReported) {
  const std::vector<std::byte> good = bytes_of(path_);
  const std::string p = dir_.file("edited.agld");
  auto expect_bad = [&](const std::vector<std::byte>& b, const std::string& what) {
    write_bytes(p, b);
    int fc;
    Status st = open_and_read_all(p, FileSystem::local(), &fc);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << what << ": " << st.to_string();
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
  };
  for (size_t extra : {1, 7, 64, 200}) {
    std::vector<std::byte> b = good;
    b.insert(b.end(), extra, std::byte{0});
    expect_bad(b, "appended " + std::to_string(extra) + " zero bytes");
    b = good;
    b.insert(b.end(), good.end() - kFooter, good.end());
    expect_bad(b, "footer repeated");
  }
  // A byte removed from the middle of a chunk, the metadata, the index.
  const Layout l = layout_of(good);
  for (uint64_t at : {l.chunk_offset[2] + 3, l.meta_offset + 5, l.index_offset + 41}) {
    std::vector<std::byte> b = good;
    b.erase(b.begin() + static_cast<std::ptrdiff_t>(at));
    expect_bad(b, "byte " + std::to_string(at) + " removed");
  }
  // Two stores back to back.
  std::vector<std::byte> two = good;
  two.insert(two.end(), good.begin(), good.end());
  expect_bad(two, "two stores concatenated");
}

INSTANTIATE_TEST_SUITE_P(Kinds, StoreCorruption,
                         ::testing::Values(SmallStore{"zstd_values", Codec::kZstd, false},
                                           SmallStore{"zstd_ones", Codec::kZstd, true},
                                           SmallStore{"none_values", Codec::kNone, false},
                                           SmallStore{"none_ones", Codec::kNone, true},
                                           SmallStore{"zstd_stats", Codec::kZstd, false, true},
                                           SmallStore{"none_stats", Codec::kNone, false, true}),
                         [](const auto& p) { return std::string(p.param.name); });

// A store converted from LIBSVM text by agld::convert, large enough that only a stride of
// its chunk bytes is flipped (every byte of everything else is).
TEST(StoreCorruptionLarge, ConvertedStoreFlipsAndTruncations) {
  TempDir dir;
  test::RandomMatrixSpec spec;
  spec.rows = 6000;
  spec.features = 5000;
  spec.max_row_nnz = 30;
  spec.long_row_prob = 0.002;
  std::mt19937_64 rng(99);
  const std::string text = test::to_libsvm(test::random_matrix(spec, rng));
  test::write_file(dir.file("in.txt"), text);
  ConvertOptions opt;
  opt.inputs = {dir.file("in.txt")};
  opt.output = dir.file("big.agld");
  opt.chunk_rows = 700;
  opt.threads = 2;
  ConvertReport rep;
  Status st = convert(opt, &rep);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const std::vector<std::byte> good = bytes_of(opt.output);
  ASSERT_GE(layout_of(good).chunk_count, 8u);
  ASSERT_GT(good.size(), 200000u);
  const size_t tried = check_flips(opt.output, 1531);
  EXPECT_GT(tried, 2 * good.size() / 1531);
  check_truncations(opt.output, 97, /*real_stride=*/499);
}

// ---------------------------------------------------------------- magic and versions

class StoreHeaderFooter : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("s.agld");
    write_store(path_, small_matrix(50, false, 5), 20, Codec::kZstd, 300);
    good_ = bytes_of(path_);
    edited_ = dir_.file("edited.agld");
  }
  std::byte* footer(std::vector<std::byte>& b) { return b.data() + b.size() - kFooter; }
  void fix_footer_crc(std::vector<std::byte>& b) {
    format::put<uint32_t>(footer(b) + 52, crc32c::value(footer(b), 52));
  }
  Status open_edited(const std::vector<std::byte>& b) {
    write_bytes(edited_, b);
    std::unique_ptr<Store> s;
    return Store::open(edited_, &s);
  }
  TempDir dir_;
  std::string path_, edited_;
  std::vector<std::byte> good_;
};

TEST_F(StoreHeaderFooter, WrongMagic) {
  std::vector<std::byte> b = good_;
  std::memcpy(b.data(), "NOTASTOR", 8);
  std::memcpy(footer(b) + 56, "NOTASTOR", 8);
  Status st = open_edited(b);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("not an agld store"), std::string::npos) << st.message();

  // LIBSVM text is not a store either.
  std::string text;
  for (int i = 0; i < 20; ++i) text += "+1 1:0.5 7:1\n-1 2:1\n";
  test::write_file(edited_, text);
  std::unique_ptr<Store> s;
  st = Store::open(edited_, &s);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("not an agld store"), std::string::npos) << st.message();

  // Only the header's magic.
  b = good_;
  b[3] = std::byte{'x'};
  st = open_edited(b);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("header"), std::string::npos) << st.message();
}

TEST_F(StoreHeaderFooter, NewerVersionIsNotSupported) {
  std::vector<std::byte> b = good_;
  format::put<uint32_t>(b.data() + 8, kFormatVersion + 1);
  format::put<uint32_t>(footer(b) + 48, kFormatVersion + 1);
  fix_footer_crc(b);
  Status st = open_edited(b);
  EXPECT_EQ(st.code(), Status::Code::kNotSupported) << st.to_string();
  EXPECT_NE(st.message().find("newer"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
  // Even with a footer CRC that no longer matches: the version is checked first, so that
  // a newer format may change what the CRC covers.
  format::put<uint32_t>(footer(b) + 52, 0);
  st = open_edited(b);
  EXPECT_EQ(st.code(), Status::Code::kNotSupported) << st.to_string();
}

TEST_F(StoreHeaderFooter, VersionMismatchIsCorruption) {
  struct Case {
    uint32_t header, footer;
  };
  for (Case c : {Case{2, 1}, Case{1, 2}, Case{0, 0}, Case{2, 3}, Case{0xFFFFFFFF, 0xFFFFFFFF}}) {
    std::vector<std::byte> b = good_;
    format::put<uint32_t>(b.data() + 8, c.header);
    format::put<uint32_t>(footer(b) + 48, c.footer);
    fix_footer_crc(b);
    Status st = open_edited(b);
    if (c.header == c.footer && c.header > kFormatVersion) {
      EXPECT_EQ(st.code(), Status::Code::kNotSupported) << st.to_string();
    } else {
      EXPECT_EQ(st.code(), Status::Code::kCorruption)
          << "header " << c.header << ", footer " << c.footer << ": " << st.to_string();
    }
  }
}

// Reserved fields must be 0 (docs/format.md); a reader that accepted other values would
// make them unusable for a later version. The checksums are fixed up, so only the check
// of the field itself can catch these.
TEST_F(StoreHeaderFooter, ReservedFieldsMustBeZero) {
  // Header bytes 12..15 (no checksum covers the header).
  for (size_t at = 12; at < 16; ++at) {
    std::vector<std::byte> b = good_;
    b[at] = std::byte{1};
    Status st = open_edited(b);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << "header byte " << at << ": " << st.to_string();
    EXPECT_NE(st.message().find("header"), std::string::npos) << st.message();
  }
  // Footer bytes 40..47.
  for (size_t at = 40; at < 48; ++at) {
    std::vector<std::byte> b = good_;
    footer(b)[at] = std::byte{0x80};
    fix_footer_crc(b);
    Status st = open_edited(b);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << "footer byte " << at << ": " << st.to_string();
    EXPECT_NE(st.message().find("footer"), std::string::npos) << st.message();
  }
  // Index entry bytes 38..39, of the last chunk.
  const Layout l = layout_of(good_);
  for (size_t at = 38; at < 40; ++at) {
    std::vector<std::byte> b = good_;
    std::byte* index = b.data() + l.index_offset;
    index[(l.chunk_count - 1) * kEntry + at] = std::byte{4};
    format::put<uint32_t>(footer(b) + 36, crc32c::value(index, l.chunk_count * kEntry));
    fix_footer_crc(b);
    Status st = open_edited(b);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << "index byte " << at << ": " << st.to_string();
    EXPECT_NE(st.message().find("chunk index entry " + std::to_string(l.chunk_count - 1)),
              std::string::npos)
        << st.message();
  }
  // The unedited store still opens (the edits above are what is rejected).
  std::unique_ptr<Store> s;
  EXPECT_TRUE(Store::open(path_, &s).is_ok());
}

// A store replaced (by a new conversion, through the atomic rename) while it is open stays
// readable through the old mapping.
TEST_F(StoreHeaderFooter, ReplacedWhileOpenStaysReadable) {
  std::unique_ptr<Store> s;
  ASSERT_TRUE(Store::open(path_, &s).is_ok());
  write_store(path_, small_matrix(300, true, 6), 100, Codec::kNone, 300);
  int fc;
  EXPECT_TRUE(open_and_read_all(path_, FileSystem::local(), &fc).is_ok());
  DecodedChunk c;
  for (size_t k = 0; k < s->chunk_count(); ++k) {
    Status st = s->read_chunk(k, &c);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  EXPECT_EQ(s->meta().rows, 50u);
}

// ---------------------------------------------------------------- crafted chunks
// Stores whose checksums are all right but whose chunks lie: what a writer bug (or a
// hostile file) would produce. Each must be a corruption naming the chunk, never a crash.

std::vector<std::byte> zstd_frame(const std::vector<std::byte>& raw) {
  std::vector<std::byte> out(ZSTD_compressBound(raw.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 1);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// Raw chunk bytes: labels, row lengths, indices (and values).
std::vector<std::byte> raw_chunk(const std::vector<double>& labels, const std::vector<uint32_t>& row_nnz,
                                 const std::vector<uint32_t>& idx, const std::vector<float>& val) {
  std::vector<std::byte> b(8 * labels.size() + 4 * row_nnz.size() + 4 * idx.size() + 4 * val.size());
  std::byte* p = b.data();
  std::memcpy(p, labels.data(), 8 * labels.size());
  p += 8 * labels.size();
  std::memcpy(p, row_nnz.data(), 4 * row_nnz.size());
  p += 4 * row_nnz.size();
  if (!idx.empty()) std::memcpy(p, idx.data(), 4 * idx.size());
  p += 4 * idx.size();
  if (!val.empty()) std::memcpy(p, val.data(), 4 * val.size());
  return b;
}

EncodedChunk chunk_of(std::vector<std::byte> stored, uint32_t rows, uint32_t nnz, Codec codec,
                      uint8_t flags, uint32_t raw_size) {
  EncodedChunk c;
  c.bytes = std::move(stored);
  c.info.stored_size = static_cast<uint32_t>(c.bytes.size());
  c.info.raw_size = raw_size;
  c.info.row_count = rows;
  c.info.nnz = nnz;
  c.info.codec = codec;
  c.info.flags = flags;
  c.info.crc = crc32c::value(c.bytes.data(), c.bytes.size());
  return c;
}

// Writes a good first chunk, then the crafted one, so the crafted chunk is chunk 1.
Status write_crafted(const std::string& path, const EncodedChunk& crafted) {
  std::unique_ptr<StoreWriter> w;
  AGLD_RETURN_IF_ERROR(StoreWriter::create(path, &w));
  EncodedChunk good;
  SparseRows rows = small_matrix(10, false, 3);
  AGLD_RETURN_IF_ERROR(encode_chunk(rows, 0, rows.rows(), ChunkCodec{}, &good));
  AGLD_RETURN_IF_ERROR(w->add_chunk(good));
  AGLD_RETURN_IF_ERROR(w->add_chunk(crafted));
  return w->finish(binary_meta(300));
}

struct Crafted {
  const char* name;
  EncodedChunk chunk;
  bool fails_at_open;  // else at read_chunk(1)
};

std::vector<Crafted> crafted_chunks() {
  std::vector<Crafted> v;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // The plain raw bytes of a good 2-row chunk: rows {3, 9} and {0}, values 0.5.
  auto raw2 = [](std::vector<uint32_t> row_nnz, std::vector<uint32_t> idx, std::vector<double> lab = {1, -1},
                 std::vector<float> val = {}) { return raw_chunk(lab, row_nnz, idx, val); };
  auto none = [](std::vector<std::byte> raw, uint32_t rows, uint32_t nnz, uint8_t flags) {
    const auto n = static_cast<uint32_t>(raw.size());
    return chunk_of(std::move(raw), rows, nnz, Codec::kNone, flags, n);
  };
  v.push_back({"row_lengths_exceed_nnz", none(raw2({2, 2}, {3, 9, 0}), 2, 3, 0), false});
  v.push_back({"row_lengths_short_of_nnz", none(raw2({1, 1}, {3, 0, 5}), 2, 3, 0), false});
  v.push_back({"index_out_of_range", none(raw2({2, 1}, {3, 300, 0}), 2, 3, 0), false});
  v.push_back({"first_index_out_of_range", none(raw2({2, 1}, {3, 9, 4000000000u}), 2, 3, 0), false});
  v.push_back({"indices_not_increasing", none(raw2({2, 1}, {9, 3, 0}), 2, 3, 0), false});
  v.push_back({"indices_repeated", none(raw2({2, 1}, {9, 9, 0}), 2, 3, 0), false});
  v.push_back({"delta_of_zero", none(raw2({2, 1}, {9, 0, 0}), 2, 3, kChunkDelta), false});
  v.push_back({"delta_past_features", none(raw2({2, 1}, {9, 291, 0}), 2, 3, kChunkDelta), false});
  v.push_back({"delta_wraps_32_bits", none(raw2({2, 1}, {9, 0xFFFFFFFFu, 0}), 2, 3, kChunkDelta), false});
  v.push_back({"nan_label", none(raw2({2, 1}, {3, 9, 0}, {std::nan(""), 1}), 2, 3, 0), false});
  v.push_back({"infinite_label", none(raw2({2, 1}, {3, 9, 0}, {1, -inf}), 2, 3, 0), false});
  v.push_back({"nan_value", none(raw2({2, 1}, {3, 9, 0}, {1, 1}, {0.5f, nan, 2}), 2, 3, kChunkValues), false});
  // Sparse values: a bitmap of which values are stored (bit p: value p is not 1), then them.
  auto sparse = [&](uint8_t bitmap, std::vector<float> stored) {
    std::vector<std::byte> raw = raw2({2, 1}, {3, 9, 0});
    raw.push_back(std::byte{bitmap});
    for (float f : stored) {
      raw.resize(raw.size() + 4);
      std::memcpy(raw.data() + raw.size() - 4, &f, 4);
    }
    return none(std::move(raw), 2, 3, kChunkValues | kChunkSparseValues);
  };
  v.push_back({"sparse_values_control", sparse(0b010, {2.5f}), false});
  v.push_back({"sparse_bitmap_names_more", sparse(0b111, {2.5f}), false});
  v.push_back({"sparse_bitmap_names_fewer", sparse(0b001, {2.5f, 3.5f}), false});
  v.push_back({"sparse_nan_value", sparse(0b100, {nan}), false});
  // zstd: a frame of the wrong size, garbage, a frame declaring less than the index says.
  std::vector<std::byte> good_raw = raw2({2, 1}, {3, 9, 0});
  {
    std::vector<std::byte> frame = zstd_frame(good_raw);
    const auto n = static_cast<uint32_t>(good_raw.size());
    v.push_back({"zstd_good_control", chunk_of(frame, 2, 3, Codec::kZstd, 0, n), false});
    std::vector<std::byte> shorter(good_raw.begin(), good_raw.end() - 4);
    v.push_back({"zstd_frame_too_short",
                 chunk_of(zstd_frame(shorter), 2, 3, Codec::kZstd, 0, n), false});
    std::vector<std::byte> longer = good_raw;
    longer.resize(longer.size() + 4);
    v.push_back({"zstd_frame_too_long", chunk_of(zstd_frame(longer), 2, 3, Codec::kZstd, 0, n), false});
    std::vector<std::byte> garbage(40, std::byte{0x5A});
    v.push_back({"zstd_garbage", chunk_of(garbage, 2, 3, Codec::kZstd, 0, n), false});
    std::vector<std::byte> empty;
    v.push_back({"zstd_empty", chunk_of(empty, 2, 3, Codec::kZstd, 0, n), false});
  }
  // Value tables (zstd only): the table's size, the table, u16 codes; dense (a code for
  // each of the 3 nonzeros) or after a bitmap (a code for each value named).
  auto dict = [&](std::vector<uint32_t> head, std::vector<float> table, std::vector<uint16_t> codes,
                  int bitmap = -1, uint8_t extra_flags = 0) {
    std::vector<std::byte> raw = raw2({2, 1}, {3, 9, 0});
    if (bitmap >= 0) raw.push_back(static_cast<std::byte>(bitmap));
    auto add = [&raw](const void* p, size_t n) {
      raw.resize(raw.size() + n);
      std::memcpy(raw.data() + raw.size() - n, p, n);
    };
    for (uint32_t h : head) add(&h, 4);
    for (float f : table) add(&f, 4);
    for (uint16_t c : codes) add(&c, 2);
    const auto n = static_cast<uint32_t>(raw.size());
    const uint8_t flags =
        kChunkValues | kChunkValueDict | (bitmap >= 0 ? kChunkSparseValues : 0) | extra_flags;
    return chunk_of(zstd_frame(raw), 2, 3, Codec::kZstd, flags, n);
  };
  v.push_back({"dict_dense_control", dict({2}, {0.5f, 2.5f}, {1, 0, 1}), false});
  v.push_back({"dict_sparse_control", dict({2}, {0.5f, 2.5f}, {1, 0}, 0b101), false});
  v.push_back({"dict_code_out_of_range", dict({2}, {0.5f, 2.5f}, {1, 2, 0}), false});
  v.push_back({"dict_sparse_code_out_of_range", dict({2}, {0.5f, 2.5f}, {0, 7}, 0b011), false});
  v.push_back({"dict_empty_table", dict({0}, {}, {0, 0, 0, 0, 0, 0, 0}), false});
  v.push_back({"dict_table_past_the_chunk", dict({9}, {0.5f, 2.5f}, {1, 0, 1}), false});
  v.push_back({"dict_dense_codes_short", dict({3}, {0.5f, 2.5f, 3.5f}, {1}), false});
  v.push_back({"dict_sparse_bitmap_names_more", dict({2}, {0.5f, 2.5f}, {1, 0}, 0b111), false});
  v.push_back({"dict_nan_in_table", dict({2}, {0.5f, nan}, {1, 0, 1}), false});
  v.push_back({"dict_unnamed_nan_in_table", dict({2}, {0.5f, nan}, {0, 0, 0}), false});
  {
    std::vector<std::byte> raw = raw2({2, 1}, {3, 9, 0});
    const uint32_t one = 1;
    const float half = 0.5f;
    const uint16_t zero = 0;
    for (int i = 0; i < 3; ++i) {
      raw.resize(raw.size() + 2);
      std::memcpy(raw.data() + raw.size() - 2, &zero, 2);
    }
    raw.insert(raw.end() - 6, reinterpret_cast<const std::byte*>(&one),
               reinterpret_cast<const std::byte*>(&one) + 4);
    raw.insert(raw.end() - 6, reinterpret_cast<const std::byte*>(&half),
               reinterpret_cast<const std::byte*>(&half) + 4);
    v.push_back({"dict_in_uncompressed_chunk",
                 none(std::move(raw), 2, 3, kChunkValues | kChunkValueDict), true});
  }
  // Packed planes (zstd, with the index column byte-transposed): the rows {3, 9} and {0} as
  // an index column of widths {4, 0, 0, 0} (indices 3, 9, 0 in two bytes), then the values
  // section; codes in a column of their own after a table of {0.5, 2.5}.
  auto packed = [&](std::vector<uint8_t> index, std::vector<uint8_t> values, uint8_t flags,
                    Codec codec = Codec::kZstd) {
    std::vector<std::byte> raw = raw_chunk({1, -1}, {2, 1}, {}, {});
    for (uint8_t b : index) raw.push_back(std::byte{b});
    for (uint8_t b : values) raw.push_back(std::byte{b});
    const auto n = static_cast<uint32_t>(raw.size());
    return chunk_of(codec == Codec::kZstd ? zstd_frame(raw) : raw, 2, 3, codec, flags, n);
  };
  const std::vector<uint8_t> index_good{4, 0, 0, 0, 0x93, 0x00};
  const uint8_t kPacked = kChunkIndexShuffle | kChunkPackedPlanes;
  const uint8_t kPackedDict = kPacked | kChunkValues | kChunkValueDict;
  // u32 2, f32 0.5, f32 2.5
  const std::vector<uint8_t> table{2, 0, 0, 0, 0, 0, 0, 0x3f, 0, 0, 0x20, 0x40};
  auto with = [](std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  v.push_back({"packed_control", packed(index_good, {}, kPacked), false});
  v.push_back({"packed_width_not_allowed", packed({3, 0, 0, 0, 0x93, 0x00}, {}, kPacked), false});
  v.push_back({"packed_column_past_the_chunk", packed({8, 8, 8, 8, 0x93, 0x00}, {}, kPacked), false});
  v.push_back({"packed_bytes_after_the_index", packed(with(index_good, {7, 7}), {}, kPacked), false});
  v.push_back({"packed_index_out_of_range",  // plane 1 of {0, 2, 0}: 9 + 512 >= 300 features
               packed({4, 4, 0, 0, 0x93, 0x00, 0x20, 0x00}, {}, kPacked), false});
  // Codes {1, 0, 1} in one plane of 1 bit (0b101) and one of 0.
  v.push_back({"packed_dict_dense_control", packed(index_good, with(table, {1, 0, 0x05}), kPackedDict), false});
  // A bitmap naming values 0 and 2, their codes {1, 0}.
  v.push_back({"packed_dict_sparse_control",
               packed(index_good, with(with({0x05}, table), {1, 0, 0x01}), kPackedDict | kChunkSparseValues),
               false});
  v.push_back({"packed_bytes_after_the_codes",
               packed(index_good, with(table, {1, 0, 0x05, 0}), kPackedDict), false});
  v.push_back({"packed_codes_past_the_chunk", packed(index_good, with(table, {1, 8}), kPackedDict), false});
  v.push_back({"packed_code_out_of_range",  // codes {1, 0, 2} in 2 bits
               packed(index_good, with(table, {2, 0, 0x21}), kPackedDict), false});
  v.push_back({"packed_in_uncompressed_chunk", packed(index_good, {}, kPacked, Codec::kNone), true});
  v.push_back({"packed_without_index_shuffle", packed(index_good, {}, kChunkPackedPlanes), true});
  // Packed rows (zstd): a table of the labels {1, -1}, their codes {0, 1} in planes of 1 and
  // 0 bits, the row lengths {2, 1} in planes of 2, 0, 0 and 0 bits; then the packed index
  // column above.
  auto packed_rows = [&](std::vector<double> labels, std::vector<uint8_t> codes,
                         std::vector<uint8_t> lengths, Codec codec = Codec::kZstd) {
    std::vector<std::byte> raw(4 + 8 * labels.size());
    const auto size = static_cast<uint32_t>(labels.size());
    std::memcpy(raw.data(), &size, 4);
    if (!labels.empty()) std::memcpy(raw.data() + 4, labels.data(), 8 * labels.size());
    for (uint8_t b : codes) raw.push_back(std::byte{b});
    for (uint8_t b : lengths) raw.push_back(std::byte{b});
    for (uint8_t b : index_good) raw.push_back(std::byte{b});
    const auto n = static_cast<uint32_t>(raw.size());
    return chunk_of(codec == Codec::kZstd ? zstd_frame(raw) : raw, 2, 3, codec,
                    kPacked | kChunkPackedRows, n);
  };
  v.push_back({"packed_rows_control", packed_rows({1, -1}, {1, 0, 0x02}, {2, 0, 0, 0, 0x06}), false});
  v.push_back({"packed_rows_label_code_out_of_range",  // codes {0, 2} in 2 bits
               packed_rows({1, -1}, {2, 0, 0x08}, {2, 0, 0, 0, 0x06}), false});
  v.push_back({"packed_rows_table_past_the_rows",
               packed_rows({1, -1, 3}, {1, 0, 0x02}, {2, 0, 0, 0, 0x06}), false});
  v.push_back({"packed_rows_lengths_past_the_chunk",
               packed_rows({1, -1}, {1, 0, 0x02}, {8, 8, 8, 8, 0x06}), false});
  v.push_back({"packed_rows_lengths_exceed_nnz",  // {2, 2}
               packed_rows({1, -1}, {1, 0, 0x02}, {2, 0, 0, 0, 0x0A}), false});
  v.push_back({"packed_rows_nan_label",
               packed_rows({1, std::nan("")}, {1, 0, 0x02}, {2, 0, 0, 0, 0x06}), false});
  v.push_back({"packed_rows_in_uncompressed_chunk",
               packed_rows({1, -1}, {1, 0, 0x02}, {2, 0, 0, 0, 0x06}, Codec::kNone), true});
  // The largest raw size the format allows (12 + 4 nnz = 0xFFFFFFFC with one row), with a
  // frame of 64 MiB of zeros (a few KB stored): a reader that trusts the index allocates
  // 4 GiB, or, computing raw_size + 7 in 32 bits, allocates nothing and lets zstd write
  // 64 MiB into the small buffer left from the previous chunk.
  {
    const uint32_t nnz = (0xFFFFFFFCu - 12) / 4;
    v.push_back({"huge_raw_size_big_frame",
                 chunk_of(zstd_frame(std::vector<std::byte>(64u << 20)), 1, nnz, Codec::kZstd, 0,
                          0xFFFFFFFCu),
                 false});
  }
  // Index entries that do not add up are caught at open.
  v.push_back({"unknown_codec", chunk_of(good_raw, 2, 3, static_cast<Codec>(9), 0,
                                         static_cast<uint32_t>(good_raw.size())), true});
  v.push_back({"unknown_flag", chunk_of(good_raw, 2, 3, Codec::kNone, 0x80,
                                        static_cast<uint32_t>(good_raw.size())), true});
  v.push_back({"raw_size_not_its_shape", chunk_of(good_raw, 2, 4, Codec::kNone, 0,
                                                  static_cast<uint32_t>(good_raw.size())), true});
  v.push_back({"no_rows", chunk_of(good_raw, 0, 3, Codec::kNone, 0,
                                   static_cast<uint32_t>(good_raw.size())), true});
  return v;
}

TEST(StoreCrafted, LyingChunksAreCorruptionNamingTheChunk) {
  TempDir dir;
  for (const Crafted& c : crafted_chunks()) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.file(std::string(c.name) + ".agld");
    Status st = write_crafted(path, c.chunk);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    std::unique_ptr<Store> s;
    st = Store::open(path, &s);
    if (c.fails_at_open) {
      EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.to_string();
      EXPECT_NE(st.message().find("chunk index entry 1"), std::string::npos) << st.message();
      continue;
    }
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    DecodedChunk chunk;
    EXPECT_TRUE(s->read_chunk(0, &chunk).is_ok());  // leaves a small buffer to reuse
    st = s->read_chunk(1, &chunk);
    if (std::string(c.name).find("control") != std::string::npos) {
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_EQ(chunk.nnz(), 3u);
      if (std::string(c.name) == "sparse_values_control" && chunk.values().size() == 3) {
        EXPECT_EQ(chunk.values()[0], 1.0f);
        EXPECT_EQ(chunk.values()[1], 2.5f);
        EXPECT_EQ(chunk.values()[2], 1.0f);
      }
      if (std::string(c.name) == "dict_dense_control") {
        EXPECT_EQ(std::vector<float>(chunk.values().begin(), chunk.values().end()),
                  (std::vector<float>{2.5f, 0.5f, 2.5f}));
      }
      if (std::string(c.name) == "packed_control" || std::string(c.name) == "packed_dict_dense_control") {
        EXPECT_EQ(std::vector<uint32_t>(chunk.indices().begin(), chunk.indices().end()),
                  (std::vector<uint32_t>{3, 9, 0}));
      }
      if (std::string(c.name) == "packed_rows_control") {
        EXPECT_EQ(std::vector<uint32_t>(chunk.indices().begin(), chunk.indices().end()),
                  (std::vector<uint32_t>{3, 9, 0}));
        ASSERT_EQ(chunk.row_count(), 2u);
        EXPECT_EQ(chunk.row_indices(0).size(), 2u);
        EXPECT_EQ(chunk.labels()[0], 1.0);
        EXPECT_EQ(chunk.labels()[1], -1.0);
      }
      if (std::string(c.name) == "packed_dict_dense_control") {
        EXPECT_EQ(std::vector<float>(chunk.values().begin(), chunk.values().end()),
                  (std::vector<float>{2.5f, 0.5f, 2.5f}));
      }
      if (std::string(c.name) == "packed_dict_sparse_control") {
        EXPECT_EQ(std::vector<float>(chunk.values().begin(), chunk.values().end()),
                  (std::vector<float>{2.5f, 1.0f, 0.5f}));
      }
      if (std::string(c.name) == "dict_sparse_control") {
        EXPECT_EQ(std::vector<float>(chunk.values().begin(), chunk.values().end()),
                  (std::vector<float>{2.5f, 1.0f, 0.5f}));
      }
      continue;
    }
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.to_string();
    EXPECT_NE(st.message().find("chunk 1 ("), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
    if (std::string(c.name) == "sparse_bitmap_names_more") {
      EXPECT_NE(st.message().find("names more values than are stored"), std::string::npos) << st.message();
    }
    if (std::string(c.name) == "dict_code_out_of_range") {
      EXPECT_NE(st.message().find("value code out of range"), std::string::npos) << st.message();
    }
    if (std::string(c.name) == "dict_table_past_the_chunk") {
      EXPECT_NE(st.message().find("value table of 9 entries does not fit"), std::string::npos)
          << st.message();
    }
    const std::map<std::string, std::string> says{
        {"packed_width_not_allowed", "plane 0 of width 3"},
        {"packed_column_past_the_chunk", "past the chunk"},
        {"packed_bytes_after_the_index", "2 bytes after the index column"},
        {"packed_index_out_of_range", "out of range"},
        {"packed_bytes_after_the_codes", "1 bytes after the value codes"},
        {"packed_codes_past_the_chunk", "value codes: packed column"},
        {"packed_code_out_of_range", "value code out of range"},
        {"packed_rows_label_code_out_of_range", "label code out of range"},
        {"packed_rows_table_past_the_rows", "label table of 3 entries"},
        {"packed_rows_lengths_past_the_chunk", "row lengths: packed column"},
        {"packed_rows_lengths_exceed_nnz", "row lengths exceed"},
        {"packed_rows_nan_label", "non-finite label"},
        {"dict_unnamed_nan_in_table", "non-finite value in the value table"}};
    if (says.count(c.name)) {
      EXPECT_NE(st.message().find(says.at(c.name)), std::string::npos) << st.message();
    }
    if (std::string(c.name) == "sparse_bitmap_names_fewer") {
      EXPECT_NE(st.message().find("names fewer values than are stored"), std::string::npos) << st.message();
    }
    // A fresh DecodedChunk too (no buffer to overrun, only a null one).
    DecodedChunk fresh;
    EXPECT_FALSE(s->read_chunk(1, &fresh).is_ok());
  }
}

// ---------------------------------------------------------------- through the CLI

std::string quote(const std::string& s) { return "'" + s + "'"; }

void expect_one_line_error(const test::RunResult& r, int code, const std::string& what,
                           const std::string& must_contain = "") {
  EXPECT_EQ(r.exit_code, code) << what << "\nstderr: " << r.err;
  EXPECT_EQ(r.err.rfind("agld: ", 0), 0u) << what << "\nstderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << "\nstderr: " << r.err;
  EXPECT_FALSE(r.err.empty() || r.err.back() != '\n') << what << "\nstderr: " << r.err;
  if (!must_contain.empty()) {
    EXPECT_NE(r.err.find(must_contain), std::string::npos) << what << "\nstderr: " << r.err;
  }
}

TEST(StoreCorruptionCli, InfoVerifyAndDumpGiveOneLineAndExit65) {
  TempDir dir;
  const std::string good_path = dir.file("good.agld");
  write_store(good_path, small_matrix(120, false, 8), 25, Codec::kZstd, 300);
  const std::vector<std::byte> good = bytes_of(good_path);
  const Layout l = layout_of(good);
  ASSERT_TRUE(test::run_agld("info --verify " + quote(good_path)).exit_code == 0);
  ASSERT_TRUE(test::run_agld("dump " + quote(good_path)).exit_code == 0);

  struct Damage {
    std::string name;
    std::vector<std::byte> bytes;
    std::string says;
  };
  std::vector<Damage> cases;
  auto flipped = [&](uint64_t at) {
    std::vector<std::byte> b = good;
    b[at] ^= std::byte{0x10};
    return b;
  };
  cases.push_back({"chunk0", flipped(l.chunk_offset[0] + 2), "chunk 0 ("});
  cases.push_back({"chunk3", flipped(l.chunk_offset[3] + l.chunk_size[3] / 2), "chunk 3 ("});
  cases.push_back({"last_chunk_end", flipped(l.meta_offset - 1), "chunk " + std::to_string(l.chunk_count - 1) + " ("});
  cases.push_back({"metadata", flipped(l.meta_offset + 10), "metadata"});
  cases.push_back({"index", flipped(l.index_offset + kEntry + 3), "chunk index"});
  cases.push_back({"footer", flipped(good.size() - 40), "footer"});
  cases.push_back({"header", flipped(9), "header"});
  cases.push_back({"truncated", std::vector<std::byte>(good.begin(), good.end() - 100), "truncated"});
  cases.push_back({"short", std::vector<std::byte>(good.begin(), good.begin() + 20), "truncated"});
  cases.push_back({"empty", {}, "empty.agld: "});
  {
    std::vector<std::byte> b = good;
    std::byte* ft = b.data() + b.size() - kFooter;
    format::put<uint32_t>(b.data() + 8, 7);
    format::put<uint32_t>(ft + 48, 7);
    format::put<uint32_t>(ft + 52, crc32c::value(ft, 52));
    cases.push_back({"newer", b, "newer"});
  }
  {
    std::string text = "+1 1:1 2:3\n-1 4:1\n";
    while (text.size() < 500) text += text;
    std::vector<std::byte> b(text.size());
    std::memcpy(b.data(), text.data(), text.size());
    cases.push_back({"libsvm_text", b, "not an agld store"});
  }
  for (const Damage& d : cases) {
    const std::string p = dir.file(d.name + ".agld");
    write_bytes(p, d.bytes);
    expect_one_line_error(test::run_agld("info --verify " + quote(p)), 65, "info --verify " + d.name, d.says);
    expect_one_line_error(test::run_agld("dump " + quote(p)), 65, "dump " + d.name, d.says);
    expect_one_line_error(test::run_agld("info --json --verify --threads 1 " + quote(p)), 65,
                          "info --json --verify " + d.name, d.says);
  }
}

TEST(StoreCorruptionCli, MissingFileExits66) {
  TempDir dir;
  const std::string p = dir.file("nope.agld");
  expect_one_line_error(test::run_agld("info " + quote(p)), 66, "info", "nope.agld");
  expect_one_line_error(test::run_agld("info --verify " + quote(p)), 66, "info --verify");
  expect_one_line_error(test::run_agld("dump " + quote(p)), 66, "dump");
}

}  // namespace corruption_test
}  // namespace
}  // namespace agld
