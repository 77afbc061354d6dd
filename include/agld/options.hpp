// The options of `agld sample` and `agld optimize`, each declared once (as dmlc's Parameter
// and LightGBM's config): a line of a table gives its key, the member of SampleOptions or
// OptimizeOptions it sets, its help, and whether a resumed run may set it anew; its default
// is the member's initializer. The command line's flags (--KEY, dashes for underscores), the
// resume merge, the checkpoint's record of the options, config.json's "given" and their
// reading back are all made from these tables, never written out by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "agld/optimize.hpp"
#include "agld/sample.hpp"
#include "agld/status.hpp"

namespace agld {

enum class OptionKind {
  kPlain,
  kSize,  // a byte count, written with a unit on the command line (8G, 512M)
  kFlag,  // a bool given by its flag alone (--intercept)
};

template <class Options>
struct OptionField {
  using Member = std::variant<std::string Options::*, bool Options::*, double Options::*, uint64_t Options::*,
                              unsigned Options::*, std::optional<std::string> Options::*,
                              std::optional<double> Options::*, std::optional<uint64_t> Options::*,
                              std::vector<uint64_t> Options::*>;
  std::string_view key;  // the JSON key; the flag is --key with dashes for underscores
  Member member;
  std::string_view help;
  OptionKind kind = OptionKind::kPlain;
  // A resumed run may give it anew: it does not change the draws (--threads, --time-limit).
  bool resumable = false;
  // Given on the command line by its flag; false: set from other flags (--track's list).
  bool flag = true;
};

std::span<const OptionField<SampleOptions>> sample_option_fields();
std::span<const OptionField<OptimizeOptions>> optimize_option_fields();

// The command-line flag of a key: "snapshot_batch" -> "--snapshot-batch".
std::string option_flag(std::string_view key);

// The options as JSON text, an object with every key of the table (an unset optional: null;
// an infinite number: "inf").
std::string options_json(const SampleOptions& o);
std::string options_json(const OptimizeOptions& o);
// The options back from that text: a key absent keeps its default (an option added since the
// text was written); a value of the wrong type is invalid_argument naming its key.
Status options_from_json(std::string_view text, SampleOptions* out);
Status options_from_json(std::string_view text, OptimizeOptions* out);

}  // namespace agld
