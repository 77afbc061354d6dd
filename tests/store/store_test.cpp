// Round-trip property tests of the store against an in-memory reference (leveldb's
// table_test harness, in spirit): random sparse matrices through every combination of
// chunk size, compression and value kind.
#include <gtest/gtest.h>

#include <random>

#include "agld/store.hpp"
#include "store/crc32c.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace store_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::RandomMatrixSpec;
using test::TempDir;

using test::write_store;

SparseRows read_all(const Store& s) {
  SparseRows all;
  DecodedChunk c;
  for (size_t k = 0; k < s.chunk_count(); ++k) {
    Status st = s.read_chunk(k, &c);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(c.first_row(), all.rows());
    c.append_to(&all);
  }
  return all;
}

TEST(Crc32c, KnownVectorsAndPortableAgreement) {
  // RFC 3720 B.4: 32 bytes of zeros, and "123456789" -> 0xE3069283.
  const char* digits = "123456789";
  EXPECT_EQ(crc32c::value(digits, 9), 0xE3069283u);
  EXPECT_EQ(crc32c::value_portable(digits, 9), 0xE3069283u);
  std::vector<unsigned char> zeros(32, 0);
  EXPECT_EQ(crc32c::value(zeros.data(), zeros.size()), 0x8A9136AAu);
  std::mt19937_64 rng(7);
  std::vector<unsigned char> data(100010);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  // Around the three-stream blocks of the hardware path (3 x 2048 bytes), from unaligned
  // starts too.
  for (size_t at : {0, 1, 3}) {
    for (size_t n : {0, 1, 7, 8, 9, 63, 64, 4095, 6143, 6144, 6145, 10007, 12293, 100003}) {
      EXPECT_EQ(crc32c::value(data.data() + at, n), crc32c::value_portable(data.data() + at, n))
          << n << " at " << at;
    }
  }
  // extend() continues a CRC.
  EXPECT_EQ(crc32c::extend(crc32c::value(data.data(), 100), data.data() + 100, 900),
            crc32c::value(data.data(), 1000));
}

struct RoundTripCase {
  size_t chunk_rows;
  Codec codec;
  bool delta;
  bool binary_values;
  bool binary_labels;
  bool index_shuffle = true;
  bool raw_literals = false;
  bool packed_planes = true;
};

class StoreRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(StoreRoundTrip, MatchesReference) {
  const RoundTripCase& p = GetParam();
  const uint64_t seed = test::test_seed(1234 + p.chunk_rows);
  std::mt19937_64 rng(seed);
  TempDir dir;
  for (int trial = 0; trial < 3; ++trial) {
    RandomMatrixSpec spec;
    spec.rows = 1 + rng() % 700;
    spec.features = trial == 2 ? 4000000000u : static_cast<uint32_t>(50 + rng() % 5000);
    spec.binary_values = p.binary_values;
    spec.binary_labels = p.binary_labels;
    SparseRows ref = test::random_matrix(spec, rng);
    const std::string path = dir.file("s" + std::to_string(trial) + ".agld");
    ChunkCodec codec{p.codec, 3, p.delta, p.index_shuffle, p.raw_literals};
    codec.packed_planes = p.packed_planes;
    ASSERT_TRUE(write_store(path, ref, p.chunk_rows, codec, spec.features).is_ok());
    std::unique_ptr<Store> s;
    Status st = Store::open(path, &s);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(s->meta().rows, ref.rows());
    EXPECT_EQ(s->meta().nnz, ref.nnz());
    EXPECT_EQ(s->chunk_count(), (ref.rows() + p.chunk_rows - 1) / p.chunk_rows);
    SparseRows back = read_all(*s);
    ASSERT_EQ(back.rows(), ref.rows());
    EXPECT_EQ(back.labels, ref.labels);
    EXPECT_EQ(back.offsets, ref.offsets);
    EXPECT_EQ(back.indices, ref.indices);
    EXPECT_EQ(back.values, ref.values);
    // chunk_of_row agrees with the index.
    for (uint64_t r = 0; r < ref.rows(); r += 1 + ref.rows() / 17) {
      const ChunkInfo& c = s->chunk(s->chunk_of_row(r));
      EXPECT_LE(c.first_row, r);
      EXPECT_LT(r, c.first_row + c.row_count);
    }
    // The value array is omitted exactly when every value in the chunk is 1.
    for (size_t k = 0; k < s->chunk_count(); ++k) {
      const ChunkInfo& c = s->chunk(k);
      bool all_ones = true;
      for (uint64_t q = ref.offsets[c.first_row]; q < ref.offsets[c.first_row + c.row_count]; ++q) {
        all_ones = all_ones && ref.values[q] == 1.0f;
      }
      EXPECT_EQ((c.flags & kChunkValues) == 0, all_ones) << "chunk " << k;
      EXPECT_EQ(c.codec, p.codec);
      EXPECT_EQ((c.flags & kChunkIndexShuffle) != 0, p.codec == Codec::kZstd && p.index_shuffle);
      EXPECT_EQ((c.flags & kChunkDelta) != 0, p.codec == Codec::kZstd && p.delta);
      EXPECT_EQ((c.flags & kChunkPackedPlanes) != 0,
                p.codec == Codec::kZstd && p.index_shuffle && p.packed_planes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllCombinations, StoreRoundTrip,
    ::testing::Values(RoundTripCase{1, Codec::kZstd, true, false, true},
                      RoundTripCase{7, Codec::kZstd, true, true, true, false},
                      RoundTripCase{64, Codec::kZstd, false, false, false},
                      RoundTripCase{64, Codec::kZstd, false, false, false, false},
                      RoundTripCase{501, Codec::kZstd, true, false, false, false},
                      RoundTripCase{100000, Codec::kZstd, true, false, true},
                      RoundTripCase{1, Codec::kNone, false, true, false},
                      RoundTripCase{13, Codec::kNone, false, false, true},
                      RoundTripCase{100000, Codec::kNone, false, true, true},
                      RoundTripCase{250, Codec::kZstd, true, true, false},
                      RoundTripCase{64, Codec::kZstd, false, false, false, true, true},
                      RoundTripCase{501, Codec::kZstd, true, false, true, false, true},
                      RoundTripCase{64, Codec::kZstd, false, false, false, true, true, false},
                      RoundTripCase{250, Codec::kZstd, true, true, true, true, false, false}));

// Raw literals change the stored bytes (and only them): the literals of a chunk of random
// indices are left unencoded, so the chunk is larger, and decodes to the same rows.
TEST(StoreRawLiterals, LargerFramesSameRows) {
  const uint64_t seed = test::test_seed(99);
  std::mt19937_64 rng(seed);
  RandomMatrixSpec spec;
  spec.rows = 2000;
  spec.features = 1000000;
  SparseRows ref = test::random_matrix(spec, rng);
  EncodedChunk huffman, raw;
  ASSERT_TRUE(encode_chunk(ref, 0, ref.rows(), ChunkCodec{Codec::kZstd, 1}, &huffman).is_ok());
  ChunkCodec raw_codec{Codec::kZstd, 1};
  raw_codec.raw_literals = true;
  ASSERT_TRUE(encode_chunk(ref, 0, ref.rows(), raw_codec, &raw).is_ok());
  EXPECT_GT(raw.bytes.size(), huffman.bytes.size());
  EXPECT_EQ(raw.info.raw_size, huffman.info.raw_size);
  EXPECT_EQ(raw.info.flags, huffman.info.flags);
}

TEST(Store, ValueLayoutIsTheSmallest) {
  // All ones: no value array. No ones: dense values. Some ones: bitmap + the others.
  TempDir dir;
  for (float other : {1.0f, 2.5f}) {
    for (int ones_every : {1, 2, 1000000}) {
      SparseRows rows;
      for (uint32_t r = 0; r < 50; ++r) {
        std::vector<uint32_t> idx{r, r + 100, r + 200};
        std::vector<float> val;
        for (uint32_t k = 0; k < 3; ++k) val.push_back((r * 3 + k) % ones_every == 0 ? 1.0f : other);
        rows.add_row(r % 2 ? 1 : -1, idx, val);
      }
      const std::string path = dir.file("v.agld");
      ASSERT_TRUE(write_store(path, rows, 1000, ChunkCodec{}, 300).is_ok());
      std::unique_ptr<Store> s;
      ASSERT_TRUE(Store::open(path, &s).is_ok());
      const uint8_t flags = s->chunk(0).flags;
      const bool all_ones = other == 1.0f || ones_every == 1;
      const bool some_ones = !all_ones && ones_every == 2;
      EXPECT_EQ((flags & kChunkValues) != 0, !all_ones) << other << " " << ones_every;
      EXPECT_EQ((flags & kChunkSparseValues) != 0, some_ones) << other << " " << ones_every;
      EXPECT_EQ(read_all(*s), rows);
    }
  }
}

TEST(Store, ValueTableWhereSmaller) {
  // Values from a few distinct ones are stored as codes into a table (zstd, unless turned
  // off); distinct values, codec none or the option off store them as they are. Dense
  // (no value is 1) and sparse (every other value is 1) alike; the rows come back the same.
  // The codes are packed planes like the indices, unless those are turned off.
  TempDir dir;
  for (bool few : {true, false}) {
    for (bool some_ones : {false, true}) {
      for (int mode = 0; mode < 4; ++mode) {  // zstd; value_dict off; none; packed_planes off
        SCOPED_TRACE(testing::Message() << few << " " << some_ones << " " << mode);
        SparseRows rows;
        for (uint32_t r = 0; r < 200; ++r) {
          std::vector<uint32_t> idx{r, r + 300, r + 600};
          std::vector<float> val;
          for (uint32_t k = 0; k < 3; ++k) {
            const uint32_t i = 3 * r + k;
            val.push_back(some_ones && i % 2 ? 1.0f : few ? 0.25f * (i % 7) - 3.0f : 0.001f * i + 2.0f);
          }
          rows.add_row(r % 2 ? 1 : -1, idx, val);
        }
        ChunkCodec codec;
        codec.packed_rows = false;  // the rows section as stored plain: 12 bytes a row
        if (mode == 1) codec.value_dict = false;
        if (mode == 2) codec.codec = Codec::kNone;
        if (mode == 3) codec.packed_planes = false;
        EncodedChunk e;
        ASSERT_TRUE(encode_chunk(rows, 0, rows.rows(), codec, &e).is_ok());
        const bool table = few && (mode == 0 || mode == 3);
        const bool packed = mode == 0 || mode == 1;
        EXPECT_EQ((e.info.flags & kChunkValueDict) != 0, table);
        EXPECT_EQ((e.info.flags & kChunkPackedPlanes) != 0, packed);
        EXPECT_EQ((e.info.flags & kChunkSparseValues) != 0, some_ones);
        if (table) {  // the table (7 values) and the codes instead of 4-byte values
          const uint64_t count = some_ones ? 300 : 600;
          // Packed: indices below 800 in planes of 8 and 2 bits (two of 0), codes below 7 in
          // one plane of 4 bits (and one of 0), each column after a byte a plane.
          const uint64_t index = packed ? 4 + 600 + 150 : 4 * 600;
          const uint64_t codes = packed ? 2 + count / 2 : 2 * count;
          EXPECT_EQ(e.info.raw_size, 12 * 200 + index + (some_ones ? 75 : 0) + 4 + 4 * 7 + codes);
        }
        const std::string path = dir.file("t.agld");
        ASSERT_TRUE(write_store(path, rows, 1000, codec, 1000).is_ok());
        std::unique_ptr<Store> s;
        ASSERT_TRUE(Store::open(path, &s).is_ok());
        EXPECT_EQ((s->chunk(0).flags & kChunkValueDict) != 0, table);
        EXPECT_EQ(read_all(*s), rows);
      }
    }
  }
}

TEST(Store, PackedRowsWhereSmaller) {
  // Labels of few distinct values become codes into a table, and the row lengths a packed
  // column (zstd, unless turned off); labels all distinct, codec none or the option off
  // store both as they are. The rows come back the same.
  TempDir dir;
  for (bool few : {true, false}) {
    for (int mode = 0; mode < 3; ++mode) {  // zstd; packed_rows off; none
      SCOPED_TRACE(testing::Message() << few << " " << mode);
      SparseRows rows;
      for (uint32_t r = 0; r < 200; ++r) {
        const double label = few ? (r % 3 ? 1.0 : -1.0) : 0.5 * r - 7.25;
        rows.add_row(label, std::vector<uint32_t>{r, r + 300, r + 600}, std::vector<float>{1, 1, 1});
      }
      ChunkCodec codec;
      if (mode == 1) codec.packed_rows = false;
      if (mode == 2) codec.codec = Codec::kNone;
      EncodedChunk e;
      ASSERT_TRUE(encode_chunk(rows, 0, rows.rows(), codec, &e).is_ok());
      const bool packed = few && mode == 0;
      EXPECT_EQ((e.info.flags & kChunkPackedRows) != 0, packed);
      const uint64_t index = mode == 2 ? 4 * 600 : 4 + 600 + 150;  // as in ValueTableWhereSmaller
      // Packed: a table of 2 labels, their codes in a plane of 1 bit (and one of 0); the
      // lengths (all 3) in a plane of 2 bits (and three of 0).
      const uint64_t rows_section = packed ? 4 + 2 * 8 + 2 + 25 + 4 + 50 : 12 * 200;
      EXPECT_EQ(e.info.raw_size, rows_section + index);
      const std::string path = dir.file("r.agld");
      ASSERT_TRUE(write_store(path, rows, 1000, codec, 1000).is_ok());
      std::unique_ptr<Store> s;
      ASSERT_TRUE(Store::open(path, &s).is_ok());
      EXPECT_EQ(read_all(*s), rows);
    }
  }
}

TEST(Store, EmptyStoreRoundTrips) {
  TempDir dir;
  SparseRows none;
  ASSERT_TRUE(write_store(dir.file("e.agld"), none, 10, ChunkCodec{}, 0).is_ok());
  std::unique_ptr<Store> s;
  ASSERT_TRUE(Store::open(dir.file("e.agld"), &s).is_ok());
  EXPECT_EQ(s->meta().rows, 0u);
  EXPECT_EQ(s->chunk_count(), 0u);
}

TEST(Store, MetadataRoundTrips) {
  TempDir dir;
  std::mt19937_64 rng(5);
  SparseRows rows = test::random_matrix({}, rng);
  std::unique_ptr<StoreWriter> w;
  ASSERT_TRUE(StoreWriter::create(dir.file("m.agld"), &w).is_ok());
  EncodedChunk c;
  ASSERT_TRUE(encode_chunk(rows, 0, rows.rows(), ChunkCodec{}, &c).is_ok());
  ASSERT_TRUE(w->add_chunk(c).is_ok());
  StoreMeta m;
  m.features = 1000;
  m.label_kind = LabelKind::kBinary;
  m.label_positive = 2;
  m.label_counts = {{1, 70}, {2, 30}};
  m.row_sq_norm_max = 12.5;
  m.row_sq_norm_sum = 0.1 + 0.2;  // not exactly representable in decimal: must round-trip
  m.empty_rows = 3;
  m.index_base = 0;
  m.sources = {{"a.svm", 123, 1700000000}, {"-", std::nullopt, std::nullopt}};
  m.options.compression = "zstd";
  m.options.level = 5;
  m.options.features = 1000;
  m.options.shuffle = true;
  m.options.seed = 42;
  m.options.test_fraction = 0.25;
  m.options.part = "train";
  m.skipped_lines = 9;
  m.created_by = "agld test";
  ASSERT_TRUE(w->finish(m).is_ok());
  std::unique_ptr<Store> s;
  ASSERT_TRUE(Store::open(dir.file("m.agld"), &s).is_ok());
  const StoreMeta& b = s->meta();
  EXPECT_EQ(b.rows, rows.rows());
  EXPECT_EQ(b.label_kind, LabelKind::kBinary);
  EXPECT_EQ(b.label_positive, 2);
  EXPECT_EQ(b.label_counts, m.label_counts);
  EXPECT_EQ(b.row_sq_norm_sum, m.row_sq_norm_sum);
  EXPECT_EQ(b.index_base, 0);
  ASSERT_EQ(b.sources.size(), 2u);
  EXPECT_EQ(b.sources[0].size, 123u);
  EXPECT_EQ(b.sources[0].mtime, 1700000000);
  EXPECT_FALSE(b.sources[1].size.has_value());
  EXPECT_EQ(b.options.level, 5);
  EXPECT_EQ(b.options.features, 1000u);
  EXPECT_TRUE(b.options.shuffle);
  EXPECT_EQ(b.options.seed, 42u);
  EXPECT_EQ(b.options.part, "train");
  EXPECT_EQ(b.skipped_lines, 9u);
  // Binary labels come out mapped to +-1, or raw on request.
  DecodedChunk d;
  ASSERT_TRUE(s->read_chunk(0, &d).is_ok());
  for (size_t r = 0; r < rows.rows(); ++r) {
    EXPECT_EQ(d.labels()[r], rows.labels[r] == 2 ? 1.0 : -1.0);
  }
  ASSERT_TRUE(s->read_chunk(0, &d, Store::Labels::kRaw).is_ok());
  for (size_t r = 0; r < rows.rows(); ++r) EXPECT_EQ(d.labels()[r], rows.labels[r]);
}

TEST(Store, IndexAtOrAboveFeaturesIsCorruption) {
  TempDir dir;
  SparseRows rows;
  std::vector<uint32_t> idx{3, 9};
  std::vector<float> val{1, 2};
  rows.add_row(1, idx, val);
  ASSERT_TRUE(write_store(dir.file("x.agld"), rows, 10, ChunkCodec{}, 9).is_ok());
  std::unique_ptr<Store> s;
  ASSERT_TRUE(Store::open(dir.file("x.agld"), &s).is_ok());
  DecodedChunk d;
  Status st = s->read_chunk(0, &d);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("chunk 0"), std::string::npos) << st.message();
}

TEST(Store, NotAStore) {
  TempDir dir;
  test::write_file(dir.file("text.svm"), std::string(200, 'x'));
  std::unique_ptr<Store> s;
  Status st = Store::open(dir.file("text.svm"), &s);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("not an agld store"), std::string::npos) << st.message();
  EXPECT_EQ(Store::open(dir.file("missing"), &s).code(), Status::Code::kNotFound);
  test::write_file(dir.file("empty"), "");
  EXPECT_EQ(Store::open(dir.file("empty"), &s).code(), Status::Code::kCorruption);
}

}  // namespace store_test
}  // namespace
}  // namespace agld
