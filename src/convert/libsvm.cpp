#include "convert/libsvm.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace agld {
namespace {

constexpr size_t kMaxReportedErrors = 10;

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
inline bool ends_token(const char* p, const char* end) { return p == end || is_space(*p) || *p == '#'; }
inline const char* skip_space(const char* p, const char* end) {
  while (p < end && is_space(*p)) ++p;
  return p;
}
inline const char* token_end(const char* p, const char* end) {
  while (p < end && !is_space(*p)) ++p;
  return p;
}

// Parses a float; accepts a leading '+', exponents. Underflow rounds to zero; overflow,
// NaN and infinity fail with a message.
inline const char* parse_float(const char* p, const char* end, float* out, const char** why) {
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

// Parses one line into the block (or records an error). Returns false on error.
class LineParser {
 public:
  LineParser(const ParseOptions& opt, ParsedBlock* out) : opt_(opt), out_(out) {}

  bool parse(const char* line, const char* end, uint64_t line_no) {
    line_ = line;
    line_no_ = line_no;
    const char* p = skip_space(line, end);
    if (p == end || *p == '#') return true;  // blank or comment line

    double label;
    const char* why = nullptr;
    const char* q = parse_double(p, end, &label, &why);
    if (!q || !ends_token(q, end)) {
      const char* te = token_end(p, end);
      return error(p, why ? std::string("label ") + quote(p, te) + " is " + why
                          : "expected a numeric label, found " + quote(p, te));
    }
    if (opt_.binary_labels_only && label != -1 && label != 0 && label != 1 && label != 2) {
      return error(p, "label " + quote(p, token_end(p, end)) +
                          " is not a binary label (-1/+1, 0/1 or 1/2) and --task is binary");
    }
    idx_.clear();
    val_.clear();
    bool sorted = true;
    uint64_t prev = 0;
    p = q;
    for (;;) {
      p = skip_space(p, end);
      if (p == end || *p == '#') break;
      const char* tok = p;
      if (end - p >= 4 && std::memcmp(p, "qid:", 4) == 0) {
        const char* te = token_end(p, end);
        if (!out_->qid_line) out_->qid_line = line_no;
        p = te;
        continue;
      }
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
      while (p < end && *p >= '0' && *p <= '9') {
        raw = raw * 10 + static_cast<uint64_t>(*p - '0');
        if (raw > std::numeric_limits<uint32_t>::max() + uint64_t{1}) {
          return error(tok, "feature index " + quote(digits, token_end(digits, end)) +
                                " is too large (the format's limit is 4294967296)");
        }
        ++p;
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
      uint64_t index;
      if (opt_.index_base == 1) {
        if (raw == 0) {
          return error(tok, "feature index 0 in a 1-based file (pass --index-base 0 if the file is 0-based)");
        }
        index = raw - 1;
      } else {
        index = raw;
      }
      if (index > std::numeric_limits<uint32_t>::max() - uint64_t{1}) {
        return error(tok, "feature index " + std::to_string(raw) + " is too large (the format's limit is 4294967295 0-based)");
      }
      if (opt_.features && index >= *opt_.features) {
        return error(tok, "feature index " + std::to_string(raw) + " is above --features " +
                              std::to_string(*opt_.features));
      }
      float v;
      const char* vs = p;
      if (p + 1 <= end && *p == '1' && ends_token(p + 1, end)) {
        v = 1.0f;
        p += 1;
      } else {
        why = nullptr;
        const char* vq = parse_float(p, end, &v, &why);
        if (!vq) {
          const char* te = token_end(vs, end);
          if (vs == te || *vs == '#') return error(vs, "expected a value after " + quote(tok, vs));
          return error(vs, why ? "value " + quote(vs, te) + " of feature " + std::to_string(raw) + " is " + why
                               : "expected a numeric value for feature " + std::to_string(raw) +
                                     ", found " + quote(vs, te));
        }
        if (!ends_token(vq, end)) {
          return error(vq, "unexpected " + quote(vq, token_end(vq, end)) + " after the value of feature " +
                               std::to_string(raw));
        }
        p = vq;
      }
      if (!idx_.empty()) {
        if (index == prev) return error(tok, "duplicate feature index " + std::to_string(raw) + " in a row");
        if (index < prev) sorted = false;
      }
      prev = index;
      idx_.push_back(static_cast<uint32_t>(index));
      val_.push_back(v);
    }
    if (!sorted && !sort_row(end)) return false;
    double sq = 0;
    for (float v : val_) sq += static_cast<double>(v) * v;
    SparseRows& rows = out_->rows;
    rows.labels.push_back(label);
    rows.indices.insert(rows.indices.end(), idx_.begin(), idx_.end());
    rows.values.insert(rows.values.end(), val_.begin(), val_.end());
    rows.offsets.push_back(rows.indices.size());
    out_->row_line.push_back(line_no);
    if (idx_.empty()) {
      ++out_->empty_rows;
    } else {
      out_->max_index = std::max<uint64_t>(out_->max_index, uint64_t{idx_.back()} + 1);
    }
    out_->sq_norm_max = std::max(out_->sq_norm_max, sq);
    out_->sq_norm_sum += sq;
    return true;
  }

 private:
  bool sort_row(const char* end) {
    perm_.resize(idx_.size());
    std::iota(perm_.begin(), perm_.end(), 0u);
    std::sort(perm_.begin(), perm_.end(), [&](uint32_t a, uint32_t b) { return idx_[a] < idx_[b]; });
    tmp_idx_.resize(idx_.size());
    tmp_val_.resize(val_.size());
    for (size_t k = 0; k < perm_.size(); ++k) {
      tmp_idx_[k] = idx_[perm_[k]];
      tmp_val_[k] = val_[perm_[k]];
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
    idx_.swap(tmp_idx_);
    val_.swap(tmp_val_);
    return true;
  }

  // The start of the n-th INDEX:VALUE token of the line (qid tokens skipped).
  const char* find_entry(size_t n, const char* end) const {
    const char* p = token_end(skip_space(line_, end), end);  // past the label
    for (size_t k = 0;; ) {
      p = skip_space(p, end);
      if (p == end) return nullptr;
      if (!(end - p >= 4 && std::memcmp(p, "qid:", 4) == 0)) {
        if (k == n) return p;
        ++k;
      }
      p = token_end(p, end);
    }
  }

  bool error(const char* at, std::string what) {
    if (out_->errors.size() < kMaxReportedErrors) {
      out_->errors.push_back({line_no_, static_cast<uint64_t>(at - line_) + 1, std::move(what)});
    }
    ++out_->skipped;
    return false;
  }

  const ParseOptions& opt_;
  ParsedBlock* out_;
  const char* line_ = nullptr;
  uint64_t line_no_ = 0;
  std::vector<uint32_t> idx_, tmp_idx_, perm_;
  std::vector<float> val_, tmp_val_;
};

}  // namespace

void ParsedBlock::clear() {
  rows.clear();
  row_line.clear();
  max_index = 0;
  empty_rows = 0;
  sq_norm_max = 0;
  sq_norm_sum = 0;
  lines = 0;
  qid_line = 0;
  skipped = 0;
  errors.clear();
}

void parse_block(std::string_view text, uint64_t first_line, const ParseOptions& opt,
                 ParsedBlock* out) {
  out->clear();
  LineParser parser(opt, out);
  const char* p = text.data();
  const char* end = p + text.size();
  uint64_t line = first_line;
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* le = nl ? nl : end;
    if (!parser.parse(p, le, line)) {  // a bad line adds no row
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
