#include "convert/declared_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace agld {
namespace {

std::string range_text(uint64_t first, uint64_t last) {
  return first == last ? std::to_string(first) : fmt::format("{}-{}", first, last);
}

bool parse_number(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// What is wrong with row r against field f (0-based [first, first + count)), or "" when
// nothing is; *p enters at the row's first entry not below earlier fields and leaves past f.
std::string row_against_field(const SparseRows& rows, size_t r, const FeatureField& f,
                              int base, size_t* p) {
  const auto idx = rows.row_indices(r);
  const auto val = rows.row_values(r);
  while (*p < idx.size() && idx[*p] < f.first) ++*p;
  const size_t at = *p;
  while (*p < idx.size() && idx[*p] - f.first < f.count) ++*p;
  const size_t held = *p - at;
  if (held == 1 && val[at] == 1.0f) return {};
  if (held == 0) return "the row holds none of its features; --fields claims exactly one with value 1";
  if (held == 1) {
    return fmt::format("the row holds feature {} with value {}; --fields claims value 1",
                       idx[at] + uint64_t(base), val[at]);
  }
  return fmt::format("the row holds {} of its features ({}, {}{}); --fields claims exactly one",
                     held, idx[at] + uint64_t(base), idx[at + 1] + uint64_t(base),
                     held > 2 ? ", ..." : "");
}

}  // namespace

Status parse_fields_spec(const std::string& spec, std::optional<uint64_t> features,
                         FieldsSpec* out) {
  *out = FieldsSpec{};
  if (spec == "auto") return Status::ok();
  if (spec == "none") {
    out->mode = FieldsSpec::Mode::kNone;
    return Status::ok();
  }
  out->mode = FieldsSpec::Mode::kDeclared;
  std::string_view rest = spec;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const size_t dash = item.find('-');
    uint64_t first = 0, last = 0;
    const bool ok = dash == std::string_view::npos
                        ? parse_number(item, &first) && ((last = first), true)
                        : parse_number(item.substr(0, dash), &first) &&
                              parse_number(item.substr(dash + 1), &last);
    if (!ok) {
      return Status::invalid_argument(fmt::format(
          "--fields: '{}' is not a range A-B of feature numbers (--fields is auto, none or "
          "A-B,C-D,... in the source's numbers)",
          item));
    }
    if (last < first) {
      return Status::invalid_argument(fmt::format("--fields: range {}-{} is reversed", first, last));
    }
    if (last > (uint64_t{1} << 32)) {
      return Status::invalid_argument(
          fmt::format("--fields: range {} is past the largest feature, 2^32", range_text(first, last)));
    }
    if (features && last > *features) {
      return Status::invalid_argument(fmt::format("--fields: range {} is past --features {}",
                                                  range_text(first, last), *features));
    }
    out->ranges.emplace_back(first, last);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(out->ranges.begin(), out->ranges.end());
  for (size_t k = 1; k < out->ranges.size(); ++k) {
    const auto& [a0, b0] = out->ranges[k - 1];
    const auto& [a1, b1] = out->ranges[k];
    if (a1 <= b0) {
      return Status::invalid_argument(fmt::format("--fields: ranges {} and {} overlap",
                                                  range_text(a0, b0), range_text(a1, b1)));
    }
  }
  return Status::ok();
}

Status declared_fields(const FieldsSpec& spec, int index_base, std::optional<uint64_t> features,
                       std::vector<FeatureField>* out) {
  out->clear();
  const uint64_t base = static_cast<uint64_t>(index_base);
  const uint64_t limit = features.value_or(uint64_t{1} << 32);  // 0-based features below it
  for (const auto& [first, last] : spec.ranges) {
    if (first < base) {
      return Status::invalid_argument(fmt::format(
          "--fields: range {} holds feature 0, and the source is 1-based", range_text(first, last)));
    }
    if (last - base >= limit) {
      return Status::invalid_argument(fmt::format(
          "--fields: range {} is past the last feature, {} (the source is {}-based{})",
          range_text(first, last), limit - 1 + base, index_base,
          features ? fmt::format(", --features {}", *features) : std::string()));
    }
    out->push_back({first - base, last - first + 1});
  }
  return Status::ok();
}

void check_declared_fields(const std::vector<FeatureField>& fields, int index_base, bool skip,
                           ParsedBlock* block) {
  if (fields.empty()) return;
  SparseRows& rows = block->rows;
  const size_t n = rows.rows();
  std::vector<ParseError> found;
  size_t kept = 0;  // skip: rows [0, kept) are the good ones so far, moved down in place
  uint64_t nnz = 0;
  for (size_t r = 0; r < n; ++r) {
    std::string what;
    size_t p = 0;
    for (size_t f = 0; f < fields.size() && what.empty(); ++f) {
      what = row_against_field(rows, r, fields[f], index_base, &p);
      if (!what.empty()) {
        const FeatureField& ff = fields[f];
        what = fmt::format("field {} (feature{} {}): {}", f + 1, ff.count == 1 ? "" : "s",
                           range_text(ff.first + uint64_t(index_base),
                                      ff.first + ff.count - 1 + uint64_t(index_base)),
                           what);
      }
    }
    if (!what.empty()) {
      if (!skip) {
        block->errors.insert(block->errors.begin(), ParseError{block->row_line[r], 0, std::move(what)});
        return;
      }
      if (found.size() < kMaxReportedErrors) found.push_back({block->row_line[r], 0, std::move(what)});
      ++block->skipped;
      block->empty_rows -= rows.offsets[r] == rows.offsets[r + 1];
      continue;
    }
    if (skip && kept != r) {  // move row r down to kept
      const uint64_t b = rows.offsets[r], e = rows.offsets[r + 1];
      std::copy(rows.indices.begin() + static_cast<std::ptrdiff_t>(b),
                rows.indices.begin() + static_cast<std::ptrdiff_t>(e),
                rows.indices.begin() + static_cast<std::ptrdiff_t>(nnz));
      std::copy(rows.values.begin() + static_cast<std::ptrdiff_t>(b),
                rows.values.begin() + static_cast<std::ptrdiff_t>(e),
                rows.values.begin() + static_cast<std::ptrdiff_t>(nnz));
      rows.labels[kept] = rows.labels[r];
      block->row_line[kept] = block->row_line[r];
      block->row_sq_norm[kept] = block->row_sq_norm[r];
    }
    nnz += rows.offsets[r + 1] - rows.offsets[r];
    rows.offsets[kept + 1] = nnz;  // offsets[r + 1] is read before this in later rows: r >= kept
    ++kept;
  }
  if (!skip || found.empty()) return;
  rows.labels.resize(kept);
  rows.offsets.resize(kept + 1);
  rows.indices.resize(nnz);
  rows.values.resize(nnz);
  block->row_line.resize(kept);
  block->row_sq_norm.resize(kept);
  std::vector<ParseError>& errors = block->errors;
  errors.insert(errors.end(), found.begin(), found.end());
  std::stable_sort(errors.begin(), errors.end(),
                   [](const ParseError& x, const ParseError& y) { return x.line < y.line; });
  if (errors.size() > kMaxReportedErrors) errors.resize(kMaxReportedErrors);
}

}  // namespace agld
