// The options as JSON and back, from their tables (include/agld/options.hpp): the record a
// checkpoint keeps of them and config.json's "given".
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "agld/options.hpp"
#include "common/json_get.hpp"

namespace agld {
namespace {

using Json = nlohmann::json;

// Numbers go through JSON as their shortest round-trip text; an infinite one (a flat prior) as "inf".
Json value_json(double v) {
  if (std::isinf(v)) return v > 0 ? Json("inf") : Json("-inf");
  return Json(v);
}
template <typename T>
Json value_json(const T& v) { return Json(v); }
template <typename T>
Json value_json(const std::optional<T>& v) { return v ? value_json(*v) : Json(); }

void read_value(const Json& j, std::string_view key, double* out) {
  if (j.is_string()) {
    const std::string s = json_get<std::string>(j, key);
    if (s == "inf" || s == "-inf") {
      *out = s == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
      return;
    }
  }
  *out = json_get<double>(j, key);
}
template <typename T>
void read_value(const Json& j, std::string_view key, T* out) { *out = json_get<T>(j, key); }
template <typename T>
void read_value(const Json& j, std::string_view key, std::optional<T>* out) {
  if (j.is_null()) {
    out->reset();
    return;
  }
  T v{};
  read_value(j, key, &v);
  *out = v;
}

template <class O>
std::string to_json(const O& o, std::span<const OptionField<O>> fields) {
  Json j = Json::object();
  for (const OptionField<O>& f : fields) {
    std::visit([&](auto member) { j[std::string(f.key)] = value_json(o.*member); }, f.member);
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <class O>
Status from_json(std::string_view text, std::span<const OptionField<O>> fields, O* out) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return Status::invalid_argument(std::string("the options are not valid JSON: ") + e.what());
  }
  if (!j.is_object()) return Status::invalid_argument("the options are not a JSON object");
  O o;
  try {
    for (const OptionField<O>& f : fields) {
      const std::string key(f.key);
      if (!j.contains(key)) continue;  // an option added since: its default
      std::visit([&](auto member) { read_value(j[key], f.key, &(o.*member)); }, f.member);
    }
  } catch (const Json::exception& e) {
    return Status::invalid_argument(std::string("the options: ") + e.what());
  }
  *out = std::move(o);
  return Status::ok();
}

}  // namespace

std::string option_flag(std::string_view key) {
  std::string flag = "--";
  for (char c : key) flag += c == '_' ? '-' : c;
  return flag;
}

std::string options_json(const SampleOptions& o) { return to_json(o, sample_option_fields()); }
std::string options_json(const OptimizeOptions& o) { return to_json(o, optimize_option_fields()); }
Status options_from_json(std::string_view text, SampleOptions* out) {
  return from_json(text, sample_option_fields(), out);
}
Status options_from_json(std::string_view text, OptimizeOptions* out) {
  return from_json(text, optimize_option_fields(), out);
}

}  // namespace agld
