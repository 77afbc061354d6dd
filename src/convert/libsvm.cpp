#include "convert/libsvm.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace agld {
namespace {

// Whitespace inside a line (a newline ends the line before the parser sees it).
constexpr auto kSpaceTable = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {' ', '\t', '\r', '\v', '\f'}) t[c] = true;
  return t;
}();
inline bool is_space(char c) { return kSpaceTable[static_cast<unsigned char>(c)]; }
// What may follow a token: whitespace, a comment, or the newline that ends every line the
// parser sees (a line's end always holds one, so no bound is checked).
constexpr auto kEndTable = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {' ', '\t', '\r', '\v', '\f', '#', '\n'}) t[c] = true;
  return t;
}();
inline bool ends_token(const char* p) { return kEndTable[static_cast<unsigned char>(*p)]; }
// The line must be followed by a non-space (its '\n'), so no bound is checked.
inline const char* skip_space(const char* p) {
  while (is_space(*p)) ++p;
  return p;
}
inline const char* token_end(const char* p, const char* end) {
  while (p < end && !is_space(*p)) ++p;
  return p;
}

// Parses a float; accepts a leading '+', exponents. Underflow rounds to zero; overflow,
// NaN and infinity fail with a message.
// Exact fast path for the common short decimals ("0.693147", "-12", "3.5"): an integer
// mantissa m < 2^24 and k <= 10 fractional digits are both exact in float, so m / 10^k is
// one correctly rounded IEEE division (Clinger's fast path). Returns nullptr when the token
// does not fit it (exponents, long mantissas, inf, nan), leaving it to from_chars.
inline const char* parse_float_fast(const char* p, const char* end, float* out) {
  static constexpr float kPow10[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
  bool neg = false;
  if (p < end && (*p == '-' || *p == '+')) {
    neg = *p == '-';
    ++p;
  }
  uint32_t m = 0;
  const char* first = p;
  for (; static_cast<unsigned>(*p - '0') < 10; ++p) m = m * 10 + static_cast<unsigned>(*p - '0');
  int digits = static_cast<int>(p - first), frac = 0;
  if (*p == '.') {
    const char* f = ++p;
    for (; static_cast<unsigned>(*p - '0') < 10; ++p) m = m * 10 + static_cast<unsigned>(*p - '0');
    frac = static_cast<int>(p - f);
    digits += frac;
  }
  // 10^7 < 2^24: up to 7 digits are exact in float (more may have wrapped m: not used).
  if (digits == 0 || digits > 7 || !ends_token(p)) return nullptr;
  float v = static_cast<float>(m);
  if (frac > 0) v /= kPow10[frac];
  *out = neg ? -v : v;
  return p;
}

inline const char* parse_float(const char* p, const char* end, float* out, const char** why) {
  if (const char* q = parse_float_fast(p, end, out)) return q;
  const char* s = (p < end && *p == '+' && p + 1 < end && *(p + 1) != '-') ? p + 1 : p;
  auto [q, ec] = std::from_chars(s, end, *out);
  if (ec == std::errc::result_out_of_range) {
    double d;
    auto [q2, ec2] = std::from_chars(s, end, d);
    if (ec2 == std::errc() && std::abs(d) < 1.0) {
      *out = static_cast<float>(d);
      return q2;
    }
    *why = "out of float32 range";
    return nullptr;
  }
  if (ec != std::errc()) return nullptr;
  if (!std::isfinite(*out)) {
    *why = "not finite";
    return nullptr;
  }
  return q;
}

inline const char* parse_double(const char* p, const char* end, double* out, const char** why) {
  {  // Fast path: a small integer label ("1", "-1", "+1", "0").
    const char* q = p;
    bool neg = false;
    if (q < end && (*q == '-' || *q == '+')) neg = *q++ == '-';
    int64_t v = 0;
    const char* digits = q;
    while (q < end && q - digits < 15 && *q >= '0' && *q <= '9') v = v * 10 + (*q++ - '0');
    if (q > digits && (q == end || is_space(*q) || *q == '#')) {
      *out = static_cast<double>(neg ? -v : v);
      return q;
    }
  }
  const char* s = (p < end && *p == '+' && p + 1 < end && *(p + 1) != '-') ? p + 1 : p;
  auto [q, ec] = std::from_chars(s, end, *out);
  if (ec == std::errc::result_out_of_range) {
    *why = "out of range";
    return nullptr;
  }
  if (ec != std::errc()) return nullptr;
  if (!std::isfinite(*out)) {
    *why = "not finite";
    return nullptr;
  }
  return q;
}

std::string quote(const char* b, const char* e) {
  std::string s(b, std::min<size_t>(static_cast<size_t>(e - b), 40));
  if (static_cast<size_t>(e - b) > 40) s += "...";
  return "'" + s + "'";
}

// Reads the decimal digits at p into *value; returns the pointer past them. The line must
// be followed by a non-digit (its '\n'), so no bound is checked. More than 10 digits give
// a value above 2^32, which the caller rejects. (An 8-digits-at-a-time SWAR version was
// measured no faster on criteo-shaped text with bench/parse_bench.)
inline const char* parse_digits(const char* p, uint64_t* value) {
  uint64_t v = 0;
  const char* first = p;
  for (; static_cast<unsigned>(*p - '0') < 10; ++p) v = v * 10 + static_cast<unsigned>(*p - '0');
  *value = p - first > 10 ? std::numeric_limits<uint64_t>::max() : v;
  return p;
}

// Parses one line into the block (or records an error). Returns false on error.
class LineParser {
 public:
  LineParser(const ParseOptions& opt, ParsedBlock* out)
      : opt_(opt),
        out_(out),
        index_base_(opt.index_base == 1 ? 1 : 0),
        features_(opt.features ? *opt.features : std::numeric_limits<uint64_t>::max()),
        index_limit_(std::min<uint64_t>(features_, std::numeric_limits<uint32_t>::max())) {}

  bool parse(const char* line, const char* end, uint64_t line_no) {
    line_ = line;
    line_no_ = line_no;
    const char* p = skip_space(line);
    if (p == end || *p == '#') return true;  // blank or comment line

    double label;
    const char* why = nullptr;
    const char* q = parse_double(p, end, &label, &why);
    if (!q || !ends_token(q)) {
      const char* te = token_end(p, end);
      return error(p, why ? std::string("label ") + quote(p, te) + " is " + why
                          : "expected a numeric label, found " + quote(p, te));
    }
    if (opt_.binary_labels_only && label != -1 && label != 0 && label != 1 && label != 2) {
      return error(p, "label " + quote(p, token_end(p, end)) +
                          " is not a binary label (-1/+1, 0/1 or 1/2) and --task is binary");
    }
    // The row's entries go to scratch arrays through plain pointers (an entry takes at
    // least 4 bytes of the line, so half the line's length bounds their count), and to the
    // block in one append at the end.
    const size_t cap = static_cast<size_t>(end - line) / 2 + 1;
    if (row_idx_.size() < cap) {
      row_idx_.resize(cap);
      row_val_.resize(cap);
    }
    uint32_t* const oi = row_idx_.data();
    float* const ov = row_val_.data();
    size_t n = 0;
    double sq = 0;
    bool sorted = true;
    uint64_t prev = 0;
    p = q;
    for (;;) {
      p = skip_space(p);
      const char* tok = p;
      uint64_t raw;
      if (static_cast<unsigned>(*p - '0') < 10) {  // the common case: INDEX:VALUE
        p = parse_digits(p, &raw);
        if (*p != ':') return bad_entry(tok, end);
      } else {
        if (p == end || *p == '#') break;
        if (*p == 'q' && end - p >= 4 && std::memcmp(p, "qid:", 4) == 0) {
          if (!out_->qid_line) out_->qid_line = line_no;
          p = token_end(p, end);
          continue;
        }
        return bad_entry(tok, end);
      }
      ++p;  // ':'
      // One compare catches index 0 in a 1-based file (it wraps around), indices beyond the
      // format's limit and indices at or above --features; bad_entry tells them apart.
      const uint64_t index = raw - index_base_;
      if (index >= index_limit_) return bad_entry(tok, end);
      float v;
      if (*p == '1' && ends_token(p + 1)) {
        v = 1.0f;
        p += 1;
      } else {
        const char* vq = parse_float(p, end, &v, &why);
        if (!vq || !ends_token(vq)) return bad_entry(tok, end);
        p = vq;
      }
      if (n > 0) {
        if (index == prev) return error(tok, "duplicate feature index " + std::to_string(raw) + " in a row");
        if (index < prev) sorted = false;
      }
      prev = index;
      oi[n] = static_cast<uint32_t>(index);
      ov[n] = v;
      ++n;
      sq += static_cast<double>(v) * v;
    }
    if (!sorted && !sort_row(n, end)) return false;
    SparseRows& rows = out_->rows;
    rows.indices.insert(rows.indices.end(), oi, oi + n);
    rows.values.insert(rows.values.end(), ov, ov + n);
    rows.labels.push_back(label);
    rows.offsets.push_back(rows.indices.size());
    out_->row_line.push_back(line_no);
    if (n == 0) {
      ++out_->empty_rows;
    } else {
      out_->max_index = std::max<uint64_t>(out_->max_index, uint64_t{oi[n - 1]} + 1);
    }
    out_->row_sq_norm.push_back(sq);
    return true;
  }

 private:
  // Sorts the row's n scratch entries by index; a duplicate is an error.
  bool sort_row(size_t n, const char* end) {
    uint32_t* idx = row_idx_.data();
    float* val = row_val_.data();
    perm_.resize(n);
    std::iota(perm_.begin(), perm_.end(), 0u);
    std::sort(perm_.begin(), perm_.end(), [&](uint32_t a, uint32_t b) { return idx[a] < idx[b]; });
    tmp_idx_.resize(n);
    tmp_val_.resize(n);
    for (size_t k = 0; k < n; ++k) {
      tmp_idx_[k] = idx[perm_[k]];
      tmp_val_[k] = val[perm_[k]];
    }
    for (size_t k = 1; k < tmp_idx_.size(); ++k) {
      if (tmp_idx_[k] == tmp_idx_[k - 1]) {
        // Find the second occurrence for the column.
        const uint32_t dup = tmp_idx_[k];
        size_t seen = std::max(perm_[k], perm_[k - 1]);
        const char* p = find_entry(seen, end);
        uint64_t raw = uint64_t{dup} + static_cast<uint64_t>(opt_.index_base);
        return error(p ? p : line_, "duplicate feature index " + std::to_string(raw) + " in a row");
      }
    }
    std::copy(tmp_idx_.begin(), tmp_idx_.end(), idx);
    std::copy(tmp_val_.begin(), tmp_val_.end(), val);
    return true;
  }

  // The start of the n-th INDEX:VALUE token of the line (qid tokens skipped).
  const char* find_entry(size_t n, const char* end) const {
    const char* p = token_end(skip_space(line_), end);  // past the label
    for (size_t k = 0;; ) {
      p = skip_space(p);
      if (p == end) return nullptr;
      if (!(end - p >= 4 && std::memcmp(p, "qid:", 4) == 0)) {
        if (k == n) return p;
        ++k;
      }
      p = token_end(p, end);
    }
  }

  // Reports what is wrong with the INDEX:VALUE entry at tok (the fast path in parse() only
  // knows that something is). Always returns false.
  bool bad_entry(const char* tok, const char* end) {
    const char* p = tok;
    const char* why = nullptr;
    if (*p == '-') {
      const char* te = token_end(p, end);
      if (p + 1 < end && *(p + 1) >= '0' && *(p + 1) <= '9') {
        const char* c = static_cast<const char*>(std::memchr(p, ':', static_cast<size_t>(te - p)));
        return error(tok, "negative feature index " + quote(p, c ? c : te));
      }
      return error(tok, "expected INDEX:VALUE, found " + quote(p, te));
    }
    uint64_t raw = 0;
    const char* digits = p;
    p = parse_digits(p, &raw);
    if (raw > std::numeric_limits<uint32_t>::max() + uint64_t{1}) {
      return error(tok, "feature index " + quote(digits, token_end(digits, end)) +
                            " is too large (the format's limit is 4294967296)");
    }
    if (p == end || *p != ':') {
      const char* te = token_end(tok, end);
      if (p == digits && p < end && *p == ':') {
        return error(tok, "expected a feature index before ':', found " + quote(tok, te));
      }
      return error(tok, "expected INDEX:VALUE (a value without an index?), found " + quote(tok, te));
    }
    if (p == digits) return error(tok, "expected a feature index before ':'");
    ++p;  // ':'
    if (index_base_ == 1 && raw == 0) {
      return error(tok, "feature index 0 in a 1-based file (pass --index-base 0 if the file is 0-based)");
    }
    const uint64_t index = raw - index_base_;
    if (index > std::numeric_limits<uint32_t>::max() - uint64_t{1}) {
      return error(tok, "feature index " + std::to_string(raw) + " is too large (the format's limit is 4294967295 0-based)");
    }
    if (index >= features_) {
      return error(tok, "feature index " + std::to_string(raw) + " is above --features " +
                            std::to_string(*opt_.features));
    }
    float v;
    const char* vs = p;
    const char* vq = parse_float(p, end, &v, &why);
    if (!vq) {
      const char* te = token_end(vs, end);
      if (vs == te || *vs == '#') return error(vs, "expected a value after " + quote(tok, vs));
      return error(vs, why ? "value " + quote(vs, te) + " of feature " + std::to_string(raw) + " is " + why
                           : "expected a numeric value for feature " + std::to_string(raw) +
                                 ", found " + quote(vs, te));
    }
    if (!ends_token(vq)) {
      return error(vq, "unexpected " + quote(vq, token_end(vq, end)) + " after the value of feature " +
                           std::to_string(raw));
    }
    return error(tok, "malformed entry " + quote(tok, token_end(tok, end)));
  }

  bool error(const char* at, std::string what) {  // the bad row never reached the block
    if (out_->errors.size() < kMaxReportedErrors) {
      out_->errors.push_back({line_no_, static_cast<uint64_t>(at - line_) + 1, std::move(what)});
    }
    ++out_->skipped;
    return false;
  }

  const ParseOptions& opt_;
  ParsedBlock* out_;
  // Copies of the options read per token, kept by value so that they can stay in registers.
  const uint64_t index_base_;   // subtracted from each index read
  const uint64_t features_;
  const uint64_t index_limit_;  // 0-based indices must be below this
  const char* line_ = nullptr;
  uint64_t line_no_ = 0;
  std::vector<uint32_t> row_idx_, tmp_idx_, perm_;  // the current row's entries; sort scratch
  std::vector<float> row_val_, tmp_val_;
};

}  // namespace

void ParsedBlock::clear() {
  rows.clear();
  row_line.clear();
  max_index = 0;
  empty_rows = 0;
  row_sq_norm.clear();
  lines = 0;
  qid_line = 0;
  skipped = 0;
  errors.clear();
}

void parse_block(std::string_view text, uint64_t first_line, const ParseOptions& opt,
                 ParsedBlock* out) {
  out->clear();
  out->rows.indices.reserve(text.size() / 8);  // criteo: ~9 bytes of text an entry
  out->rows.values.reserve(text.size() / 8);
  LineParser parser(opt, out);
  const char* p = text.data();
  const char* end = p + text.size();
  uint64_t line = first_line;
  std::string last;  // a final line without '\n', copied so that it has one to stop at
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* lb = p;
    const char* le = nl;
    if (!nl) {
      last.assign(p, end);
      last.push_back('\n');
      lb = last.data();
      le = lb + last.size() - 1;
    }
    if (!parser.parse(lb, le, line)) {  // a bad line adds no row
      if (!opt.skip_bad_lines) {
        out->lines = line - first_line + 1;
        return;
      }
    }
    ++line;
    p = nl ? nl + 1 : end;
  }
  out->lines = line - first_line;
}

bool has_index_zero(std::string_view text) {
  for (size_t i = text.find(':'); i != std::string_view::npos; i = text.find(':', i + 1)) {
    if (i >= 1 && text[i - 1] == '0' && (i == 1 || is_space(text[i - 2]) || text[i - 2] == '\n')) {
      return true;
    }
  }
  return false;
}

}  // namespace agld
