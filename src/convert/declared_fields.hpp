// `agld convert --fields SPEC`: what SPEC says, and the check of declared fields against the
// rows of a parsed block (every row holds exactly one feature of each, with value 1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agld/status.hpp"
#include "agld/store.hpp"
#include "convert/libsvm.hpp"

namespace agld {

struct FieldsSpec {
  enum class Mode { kAuto, kNone, kDeclared };
  Mode mode = Mode::kAuto;
  // kDeclared: [first, last] in the source's feature numbers, increasing and disjoint.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
};

// "auto", "none" or "A-B,C-D,..." (a lone "A" is A-A), ranges in any order. With --features
// D, a range past D (the largest feature of a 1-based source) is refused here already.
// invalid_argument, one line, for anything else.
Status parse_fields_spec(const std::string& spec, std::optional<uint64_t> features,
                         FieldsSpec* out);

// The declared ranges as 0-based fields, once the index base is known; invalid_argument for
// a feature 0 in a 1-based source or a range past --features.
Status declared_fields(const FieldsSpec& spec, int index_base, std::optional<uint64_t> features,
                       std::vector<FeatureField>* out);

// Checks every row of *block against the fields (0-based; names use the source's numbers).
// A row that holds none of a field's features, two or more, or one with a value other than 1
// is an error at its line. Without skip, the first such row's error goes first in
// block->errors (every row parsed lies before a parse error, which stops the block); with
// skip, such rows are taken out of the block and counted as skipped, and their errors join
// the block's first few in line order.
void check_declared_fields(const std::vector<FeatureField>& fields, int index_base, bool skip,
                           ParsedBlock* block);

}  // namespace agld
