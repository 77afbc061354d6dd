// State through an archive: how the algorithm objects (snapshot strategies, the lazy state,
// the noise, the moments, the Rao-Blackwell accumulators, the online diagnostics, the
// predictive, the engine's counters) save and load themselves between iterations, for a
// checkpoint (docs/reliability.md, "Checkpoints"), without knowing its bytes.
//
// An object writes its values in a fixed order: a section opened by a four-character tag,
// then named scalars, texts and arrays. Loading reads them back in the same order into an
// object made with the same parameters, and every read is checked: a tag, a count or a length
// that is not what the run has is an error naming the value (its name), never a crash. Only
// the persistence layer (src/output/checkpoint_io.*) implements these interfaces and knows
// how the values become bytes and which format version holds them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agld/status.hpp"
#include "common/strided_span.hpp"

namespace agld {

class StateWriter {
 public:
  virtual ~StateWriter() = default;
  // A section: tag is four ASCII characters.
  virtual void section(std::string_view tag) = 0;
  virtual void u32(std::string_view name, uint32_t v) = 0;
  virtual void u64(std::string_view name, uint64_t v) = 0;
  virtual void f64(std::string_view name, double v) = 0;
  virtual void text(std::string_view name, std::string_view v) = 0;
  // An array: its length, then its values (a strided view: the lazy state's records).
  virtual void array(std::string_view name, StridedSpan<const double> v) = 0;
  virtual void array(std::string_view name, StridedSpan<const float> v) = 0;
  virtual void array(std::string_view name, StridedSpan<const uint32_t> v) = 0;
  virtual void array(std::string_view name, StridedSpan<const uint64_t> v) = 0;

  void flag(std::string_view name, bool v) { u32(name, v ? 1 : 0); }
};

class StateReader {
 public:
  virtual ~StateReader() = default;
  // The next section must have this tag; what: the section's contents, for the error.
  virtual Status section(std::string_view tag, std::string_view what) = 0;
  virtual Status u32(std::string_view name, uint32_t* v) = 0;
  virtual Status u64(std::string_view name, uint64_t* v) = 0;
  virtual Status f64(std::string_view name, double* v) = 0;
  // A text of at most max bytes.
  virtual Status text(std::string_view name, std::string* v, uint64_t max) = 0;
  // An array of exactly out.size() values (what the run has), into out.
  virtual Status array(std::string_view name, StridedSpan<double> out) = 0;
  virtual Status array(std::string_view name, StridedSpan<float> out) = 0;
  virtual Status array(std::string_view name, StridedSpan<uint32_t> out) = 0;
  virtual Status array(std::string_view name, StridedSpan<uint64_t> out) = 0;
  // An array of any length up to max values, into *out (resized).
  virtual Status vec(std::string_view name, std::vector<double>* out, uint64_t max) = 0;
  virtual Status vec(std::string_view name, std::vector<uint64_t>* out, uint64_t max) = 0;
  // A loaded value the object finds impossible (out of range, inconsistent): the error,
  // naming where in the checkpoint it was read.
  virtual Status corrupt(std::string_view what) const = 0;
  // Everything has been read: the archive holds nothing more.
  virtual Status done() = 0;

  Status flag(std::string_view name, bool* v) {
    uint32_t u = 0;
    AGLD_RETURN_IF_ERROR(u32(name, &u));
    if (u > 1) return corrupt(std::string(name) + " is " + std::to_string(u) + ", not 0 or 1");
    *v = u != 0;
    return Status::ok();
  }
};

}  // namespace agld
