// Status: the result of a storage or parsing operation. Storage code never throws; it
// returns a Status that says what went wrong and where (in the spirit of leveldb).
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace agld {

class Status {
 public:
  // Persistent in the sense that the CLI maps them to exit codes: never renumber.
  enum class Code : unsigned char {
    kOk = 0,
    kNotFound = 1,         // a file that does not exist
    kCorruption = 2,       // a store whose bytes are not what they claim
    kNotSupported = 3,     // a newer format version, a codec this build lacks
    kInvalidArgument = 4,  // a bad option or combination of options
    kIOError = 5,          // the operating system refused (read, write, full disk)
    kDataError = 6,        // malformed input text (LIBSVM parse errors)
    kInternal = 7,         // a bug in agld
  };

  Status() = default;
  static Status ok() { return Status(); }
  static Status not_found(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status not_supported(std::string msg) {
    return Status(Code::kNotSupported, std::move(msg));
  }
  static Status invalid_argument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status io_error(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status data_error(std::string msg) { return Status(Code::kDataError, std::move(msg)); }
  static Status internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }

  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "corruption: <message>" and the like; "ok" for success.
  std::string to_string() const;

  // A copy whose message is prefixed with context: "store.agld: " + message.
  Status with_context(std::string_view context) const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// Returns early from the enclosing function when a Status-valued expression fails.
#define AGLD_RETURN_IF_ERROR(expr)        \
  do {                                    \
    ::agld::Status agld_status_ = (expr); \
    if (!agld_status_.is_ok()) return agld_status_; \
  } while (0)

}  // namespace agld
