// Status's text: its code named ("not found", "corruption", ...) before its message, and a
// message given context. Status is every layer's result (storage, parsing, options, the
// sampler), so it lives with what all of them share (agld/status.hpp).
#include "agld/status.hpp"

namespace agld {

std::string Status::to_string() const {
  const char* name = "ok";
  switch (code_) {
    case Code::kOk: return "ok";
    case Code::kNotFound: name = "not found"; break;
    case Code::kCorruption: name = "corruption"; break;
    case Code::kNotSupported: name = "not supported"; break;
    case Code::kInvalidArgument: name = "invalid argument"; break;
    case Code::kIOError: name = "I/O error"; break;
    case Code::kDataError: name = "data error"; break;
    case Code::kInternal: name = "internal error"; break;
  }
  return std::string(name) + ": " + message_;
}

Status Status::with_context(std::string_view context) const {
  if (is_ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

}  // namespace agld
