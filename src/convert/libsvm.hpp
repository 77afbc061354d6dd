// Parsing LIBSVM text: "label index:value index:value ... # comment", one row a line.
// A block of whole lines is parsed on its own (so blocks parse in parallel); errors carry
// the line and column, and the caller adds the file name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agld/sparse.hpp"

namespace agld {

struct ParseOptions {
  int index_base = 1;                 // 0 or 1
  std::optional<uint64_t> features;   // indices must be below this (0-based)
  bool binary_labels_only = false;    // --task binary: labels must be in {-1, 0, 1, 2}
  bool skip_bad_lines = false;        // keep going past bad lines (they are counted)
};

struct ParseError {
  uint64_t line = 0;    // 1-based, in the file
  uint64_t column = 0;  // 1-based byte column
  std::string what;
};

// The bad lines a block reports when it skips them (the first few; the rest are counted).
inline constexpr size_t kMaxReportedErrors = 10;

struct ParsedBlock {
  SparseRows rows;
  std::vector<uint64_t> row_line;  // the line of each row
  uint64_t max_index = 0;          // largest 0-based index + 1 (0 when no entries)
  uint64_t empty_rows = 0;
  std::vector<double> row_sq_norm;  // |x|^2 of each row
  uint64_t lines = 0;              // lines in the block
  uint64_t qid_line = 0;           // first line with a qid: token (0: none)
  uint64_t skipped = 0;            // bad lines skipped
  std::vector<ParseError> errors;  // without skip: the first error; with skip: the first few

  void clear();
};

// Parses text (whole lines; the last may lack its newline) whose first line is first_line.
// Without skip_bad_lines, stops at the first bad line and reports it in errors.
void parse_block(std::string_view text, uint64_t first_line, const ParseOptions& opt,
                 ParsedBlock* out);

// Whether the text has a feature index 0 (used to detect 0-based files).
bool has_index_zero(std::string_view text);

}  // namespace agld
