// Fuzz target: the LIBSVM block parser (src/convert/libsvm.cpp).
// Input: one options byte, then the text. Checks, beyond "no crash, no hang, no sanitizer
// report": the parsed block is well formed (rows, offsets, sorted indices below the limits,
// finite numbers); parsing the text as two blocks split at a newline gives the same rows; and
// a block that parsed cleanly prints back to text that parses to the same rows.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "convert/libsvm.hpp"
#include "fuzz_support.hpp"

namespace agld {
namespace {

void check_block(const ParsedBlock& b, const ParseOptions& opt) {
  const SparseRows& r = b.rows;
  AGLD_FUZZ_CHECK(r.offsets.size() == r.labels.size() + 1 && r.offsets[0] == 0, "offsets");
  AGLD_FUZZ_CHECK(r.offsets.back() == r.indices.size() && r.indices.size() == r.values.size(), "arrays");
  AGLD_FUZZ_CHECK(b.row_line.size() == r.rows() && b.row_sq_norm.size() == r.rows(), "per-row arrays");
  AGLD_FUZZ_CHECK(opt.skip_bad_lines || b.errors.size() <= 1, "one error without skip");
  AGLD_FUZZ_CHECK(b.errors.size() <= b.skipped, "errors counted");
  const uint64_t limit = opt.features ? *opt.features : uint64_t{std::numeric_limits<uint32_t>::max()};
  uint64_t max_index = 0, empty = 0;
  for (size_t i = 0; i < r.rows(); ++i) {
    AGLD_FUZZ_CHECK(std::isfinite(r.labels[i]), "finite label");
    if (opt.binary_labels_only) {
      const double y = r.labels[i];
      AGLD_FUZZ_CHECK(y == -1 || y == 0 || y == 1 || y == 2, "binary label");
    }
    AGLD_FUZZ_CHECK(r.offsets[i] <= r.offsets[i + 1], "offsets rise");
    if (r.offsets[i] == r.offsets[i + 1]) ++empty;
    double sq = 0;
    for (uint64_t p = r.offsets[i]; p < r.offsets[i + 1]; ++p) {
      AGLD_FUZZ_CHECK(r.indices[p] < limit, "index below the limit");
      AGLD_FUZZ_CHECK(p == r.offsets[i] || r.indices[p] > r.indices[p - 1], "sorted, no duplicate");
      AGLD_FUZZ_CHECK(std::isfinite(r.values[p]), "finite value");
      max_index = std::max<uint64_t>(max_index, uint64_t{r.indices[p]} + 1);
      sq += static_cast<double>(r.values[p]) * r.values[p];
    }
    // Summed in the line's order, which sorting may have changed: equal up to rounding.
    AGLD_FUZZ_CHECK(std::abs(b.row_sq_norm[i] - sq) <= 1e-12 * sq, "row norm");
    AGLD_FUZZ_CHECK(i == 0 || b.row_line[i] > b.row_line[i - 1], "row lines increase");
  }
  AGLD_FUZZ_CHECK(b.max_index == max_index, "max_index");
  AGLD_FUZZ_CHECK(b.empty_rows == empty, "empty rows");
  for (const ParseError& e : b.errors) {
    AGLD_FUZZ_CHECK(e.line >= 1 && e.column >= 1 && !e.what.empty(), "error position and message");
  }
}

// The rows as LIBSVM text with the given index base, numbers in their shortest round-trip form.
std::string to_text(const SparseRows& r, int base) {
  std::string s;
  char buf[64];
  for (size_t i = 0; i < r.rows(); ++i) {
    s.append(buf, std::to_chars(buf, buf + sizeof buf, r.labels[i]).ptr);
    for (uint64_t p = r.offsets[i]; p < r.offsets[i + 1]; ++p) {
      s += ' ';
      s += std::to_string(uint64_t{r.indices[p]} + static_cast<uint64_t>(base));
      s += ':';
      s.append(buf, std::to_chars(buf, buf + sizeof buf, r.values[p]).ptr);
    }
    s += '\n';
  }
  return s;
}

bool same_rows(const SparseRows& a, const SparseRows& b) {
  // Values compared as numbers: -0 prints as "-0", which may come back as 0.
  if (a.labels.size() != b.labels.size() || a.offsets != b.offsets || a.indices != b.indices) return false;
  for (size_t i = 0; i < a.labels.size(); ++i) {
    if (a.labels[i] != b.labels[i]) return false;
  }
  for (size_t p = 0; p < a.values.size(); ++p) {
    if (a.values[p] != b.values[p]) return false;
  }
  return true;
}

}  // namespace
}  // namespace agld

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agld;
  if (size == 0) return 0;
  const uint8_t o = data[0];
  ParseOptions opt;
  opt.index_base = (o & 1) ? 0 : 1;
  opt.binary_labels_only = (o & 2) != 0;
  opt.skip_bad_lines = (o & 4) != 0;
  if (o & 8) opt.features = static_cast<uint64_t>(o >> 4) * 5 + 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  (void)has_index_zero(text);
  ParsedBlock whole;
  parse_block(text, 1, opt, &whole);
  check_block(whole, opt);
  if (!whole.errors.empty()) return 0;
  AGLD_FUZZ_CHECK(whole.skipped == 0, "no error, nothing skipped");

  // Two blocks split after a newline, as the conversion's read stage cuts them.
  const size_t nl = text.find('\n', text.size() / 2);
  if (nl != std::string_view::npos) {
    ParsedBlock a, b;
    parse_block(text.substr(0, nl + 1), 1, opt, &a);
    parse_block(text.substr(nl + 1), 1 + a.lines, opt, &b);
    AGLD_FUZZ_CHECK(a.errors.empty() && b.errors.empty(), "the halves of a clean text parse");
    SparseRows joined = a.rows;
    joined.append(b.rows, 0, b.rows.rows());
    AGLD_FUZZ_CHECK(same_rows(joined, whole.rows), "two blocks give the rows of one");
    AGLD_FUZZ_CHECK(a.lines + b.lines == whole.lines, "lines add up");
  }

  // Printed back and parsed again: the same rows.
  ParseOptions again = opt;
  again.skip_bad_lines = false;
  ParsedBlock round;
  parse_block(to_text(whole.rows, opt.index_base), 1, again, &round);
  AGLD_FUZZ_CHECK(round.errors.empty(), round.errors.empty() ? "" : round.errors[0].what);
  AGLD_FUZZ_CHECK(same_rows(round.rows, whole.rows), "round trip through text");
  return 0;
}
