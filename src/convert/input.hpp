// TextInput: a LIBSVM source to read bytes from. A plain file, a file compressed with
// gzip, bzip2, xz or zstd (recognised by its magic bytes, whatever its name), or "-" for
// stdin (compressed or not). Decompression goes through Boost.Iostreams filters.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld {

class TextInput {
 public:
  virtual ~TextInput() = default;
  // Opens name ("-" for stdin).
  static Status open(const std::string& name, std::unique_ptr<TextInput>* out);

  // Reads up to n bytes of text; *got = 0 at the end.
  virtual Status read(char* buf, size_t n, size_t* got) = 0;
  // Bytes of the underlying file consumed so far (compressed bytes for compressed input).
  virtual uint64_t source_bytes_read() const = 0;
  // "gzip", "bzip2", "xz", "zstd" or "plain".
  virtual const char* compression() const = 0;
  const SourceInfo& info() const { return info_; }

 protected:
  SourceInfo info_;
};

}  // namespace agld
