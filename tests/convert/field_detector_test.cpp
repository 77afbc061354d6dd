// FieldDetector (--fields auto) on rows given directly: it records exactly the ranges of
// features that every row holds exactly one of, with value 1, and nothing else; the rows'
// order and how they are cut into chunks do not matter. A brute-force check of every range
// is the reference on random rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "convert/field_detector.hpp"
#include "store/feature_accumulator.hpp"

namespace agld {
namespace {
namespace field_detector_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using Row = std::vector<std::pair<uint32_t, float>>;

SparseRows make_rows(const std::vector<Row>& rows) {
  SparseRows out;
  for (const Row& r : rows) {
    std::vector<uint32_t> idx;
    std::vector<float> val;
    for (auto [j, v] : r) {
      idx.push_back(j);
      val.push_back(v);
    }
    out.add_row(1, idx, val);
  }
  return out;
}

// The fields the detector finds in rows, added in pieces of `piece` rows.
std::vector<FeatureField> detect(const SparseRows& rows, uint64_t d, size_t piece = 1000) {
  FeatureAccumulator counts;
  FieldDetector det;
  for (size_t r = 0; r < rows.rows(); r += piece) {
    const size_t e = std::min(rows.rows(), r + piece);
    counts.add(rows.indices.data() + rows.offsets[r], rows.values.data() + rows.offsets[r],
               rows.offsets[e] - rows.offsets[r]);
    det.add(rows, r, e);
  }
  return det.fields(counts, d, rows.rows());
}

// Whether every row holds exactly one of [a, b], with value 1.
bool complete(const SparseRows& rows, uint64_t a, uint64_t b) {
  for (size_t r = 0; r < rows.rows(); ++r) {
    int held = 0;
    auto idx = rows.row_indices(r);
    auto val = rows.row_values(r);
    for (size_t p = 0; p < idx.size(); ++p) {
      if (idx[p] >= a && idx[p] <= b) {
        if (val[p] != 1.0f) return false;
        ++held;
      }
    }
    if (held != 1) return false;
  }
  return rows.rows() > 0;
}

std::vector<FeatureField> F(std::initializer_list<std::pair<uint64_t, uint64_t>> ranges) {
  std::vector<FeatureField> out;
  for (auto [a, b] : ranges) out.push_back({a, b - a + 1});
  return out;
}

// Two fields beside numeric features and a constant column of 1 (a field of one feature);
// feature 5 is a level of the first field that no row holds: inside the field.
TEST(FieldDetector, FindsFieldsBesideNumericFeaturesAndAConstantColumn) {
  const SparseRows rows = make_rows({
      {{0, 0.5f}, {1, 1}, {3, 1}, {8, 1}},
      {{0, 2.0f}, {1, 1}, {4, 1}, {9, 1}, {12, 3.0f}},
      {{1, 1}, {6, 1}, {10, 1}, {12, 1.0f}},
      {{0, 1.0f}, {1, 1}, {3, 1}, {11, 1}},
  });
  EXPECT_EQ(detect(rows, 14), F({{1, 1}, {3, 6}, {8, 11}}));
  EXPECT_EQ(detect(rows, 14, 1), F({{1, 1}, {3, 6}, {8, 11}}));
}

// Candidates [2, 4] and [6, 8] with a numeric feature 5 between them; one row spoils the
// first (no part of it is complete either), the second is recorded.
TEST(FieldDetector, NoFieldWhenARowHoldsTwoLevels) {
  const SparseRows rows = make_rows({
      {{2, 1}, {5, 0.5f}, {6, 1}},
      {{3, 1}, {4, 1}, {5, 0.5f}, {7, 1}},  // two levels of [2, 4]
      {{4, 1}, {5, 0.5f}, {8, 1}},
  });
  EXPECT_EQ(detect(rows, 9), F({{6, 8}}));
}

TEST(FieldDetector, NoFieldWhenALevelHasValueTwo) {
  const SparseRows rows = make_rows({
      {{2, 1}, {5, 0.5f}, {6, 1}},
      {{3, 2.0f}, {5, 0.5f}, {7, 1}},
      {{4, 1}, {5, 0.5f}, {8, 1}},
  });
  EXPECT_EQ(detect(rows, 9), F({{6, 8}}));
}

TEST(FieldDetector, NoFieldWhenARowHoldsNone) {
  const SparseRows rows = make_rows({
      {{2, 1}, {5, 0.5f}, {6, 1}},
      {{5, 0.5f}, {7, 1}},  // none of [2, 4]
      {{4, 1}, {5, 0.5f}, {8, 1}},
  });
  EXPECT_EQ(detect(rows, 9), F({{6, 8}}));
  // An empty row holds no field's level: no field at all.
  EXPECT_EQ(detect(make_rows({{{0, 1}}, {}, {{0, 1}}}), 1), F({}));
}

// Without the numeric feature between them, ranges across two candidates can be complete,
// and are found: rows {2, 5}, {3, 4, 6}, {4, 7} each hold exactly one of [4, 5].
TEST(FieldDetector, FindsACompleteRangeAcrossTwoCandidates) {
  const SparseRows rows = make_rows({{{2, 1}, {5, 1}}, {{3, 1}, {4, 1}, {6, 1}}, {{4, 1}, {7, 1}}});
  EXPECT_EQ(detect(rows, 8), F({{4, 5}}));
}

TEST(FieldDetector, NoRowsNoFields) {
  EXPECT_EQ(detect(SparseRows{}, 10), F({}));
}

// Levels no row holds at a field's ends cannot be told from the neighbours' and are left
// out; d past the largest index changes nothing.
TEST(FieldDetector, UnseenLevelsAtTheEndsAreLeftOut) {
  const SparseRows rows = make_rows({{{3, 1}, {7, 1}}, {{5, 1}, {8, 1}}});
  EXPECT_EQ(detect(rows, 20), F({{3, 5}, {7, 8}}));
}

// Rows {0, 2} and {1} make both [0, 1] and [1, 2] complete: the first is recorded, a true
// claim, and the records stay disjoint.
TEST(FieldDetector, OverlappingCompleteRangesRecordTheFirst) {
  const SparseRows rows = make_rows({{{0, 1}, {2, 1}}, {{1, 1}}});
  EXPECT_EQ(detect(rows, 3), F({{0, 1}}));
}

// Random rows of planted fields, some broken (a missing level, a doubled level, a value other
// than 1), beside numeric features: every range recorded is complete by brute force, every
// planted field left intact is recorded, and the order of the rows does not matter.
TEST(FieldDetector, MatchesBruteForceOnRandomRows) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE(trial);
    std::uniform_int_distribution<int> pick(0, 9);
    // Layout: 2 numeric features, then fields of 1..5 levels, some separated by a numeric one.
    std::vector<std::pair<uint32_t, uint32_t>> fields;  // [first, size]
    std::vector<uint32_t> numeric = {0, 1};
    uint32_t next = 2;
    for (int f = 0; f < 6; ++f) {
      if (pick(rng) < 3) numeric.push_back(next++);
      const uint32_t size = 1 + static_cast<uint32_t>(pick(rng) % 5);
      fields.push_back({next, size});
      next += size;
    }
    const uint32_t d = next;
    const int broken = pick(rng) % 7;  // 6: none broken
    const int how = pick(rng) % 3;
    const size_t n = 30 + static_cast<size_t>(pick(rng)) * 5;
    std::vector<Row> list;
    for (size_t r = 0; r < n; ++r) {
      Row row;
      for (uint32_t j : numeric) {
        if (pick(rng) < 7) row.push_back({j, 0.5f + static_cast<float>(pick(rng))});
      }
      for (int f = 0; f < 6; ++f) {
        const auto [first, size] = fields[static_cast<size_t>(f)];
        const uint32_t level = first + static_cast<uint32_t>(pick(rng)) % size;
        if (f == broken && r == n / 2) {
          if (how == 0) continue;                                            // none
          if (how == 1) row.push_back({level, 2.0f});                        // value 2
          if (how == 2 && size > 1) row.push_back({first, 1}), row.push_back({first + size - 1, 1});
          if (how == 2 && size == 1) row.push_back({level, -1.0f});
          continue;
        }
        row.push_back({level, 1});
      }
      std::sort(row.begin(), row.end());
      list.push_back(row);
    }
    const SparseRows rows = make_rows(list);
    const std::vector<FeatureField> found = detect(rows, d, 7);
    for (const FeatureField& f : found) {
      EXPECT_TRUE(complete(rows, f.first, f.first + f.count - 1)) << f.first << "+" << f.count;
    }
    for (int f = 0; f < 6; ++f) {
      if (f == broken) continue;
      // Planted field f, trimmed to the levels seen, is recorded.
      const auto [first, size] = fields[static_cast<size_t>(f)];
      uint32_t lo = first + size, hi = first;
      for (uint32_t j : rows.indices) {
        if (j >= first && j < first + size) lo = std::min(lo, j), hi = std::max(hi, j);
      }
      EXPECT_NE(std::find(found.begin(), found.end(), FeatureField{lo, hi - lo + 1u}), found.end())
          << "field " << f << " [" << lo << ", " << hi << "]";
    }
    if (broken < 6) {
      const auto [first, size] = fields[static_cast<size_t>(broken)];
      for (const FeatureField& g : found) {
        EXPECT_FALSE(g.first >= first && g.first < first + size && how != 2)
            << "broken field " << broken << " recorded from " << g.first;
      }
    }
    std::vector<Row> shuffled = list;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    EXPECT_EQ(detect(make_rows(shuffled), d, 3), found);
  }
}

}  // namespace field_detector_test
}  // namespace
}  // namespace agld
