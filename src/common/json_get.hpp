// Reading a value out of parsed JSON with the integer conversions checked. nlohmann's
// get<uint64_t>() casts whatever number it finds: a float such as 1e60 is a float-to-integer
// conversion out of range (undefined behaviour), and -1 wraps to 2^64 - 1. json_get<T> takes
// for an integer type only a JSON integer within T's range, and throws nlohmann's type_error
// otherwise, as get<T>() does on a wrong type, so the callers' catch of json::exception holds.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>
#include <vector>

namespace agld {

namespace json_detail {
template <typename T>
struct is_vector : std::false_type {};
template <typename T, typename A>
struct is_vector<std::vector<T, A>> : std::true_type {};
}  // namespace json_detail

// `name` (a key, when known) starts the error message.
template <typename T>
T json_get(const nlohmann::json& v, std::string_view name = {}) {
  const auto wrong = [&](std::string what) {
    return nlohmann::json::type_error::create(302, name.empty() ? what : fmt::format("{}: {}", name, what), &v);
  };
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (std::in_range<T>(u)) return static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      if (std::in_range<T>(i)) return static_cast<T>(i);
    }
    throw wrong(fmt::format("expected an integer in [{}, {}], found {}", std::numeric_limits<T>::min(),
                            std::numeric_limits<T>::max(),
                            v.is_number() ? v.dump() : std::string("a ") + v.type_name()));
  } else if constexpr (json_detail::is_vector<T>::value) {
    if (!v.is_array()) {
      throw wrong(fmt::format("expected an array, found a {}", v.type_name()));
    }
    T out;
    out.reserve(v.size());
    for (const nlohmann::json& e : v) out.push_back(json_get<typename T::value_type>(e, name));
    return out;
  } else {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::type_error& e) {  // "[json.exception.type_error.302] type must be ..."
      if (name.empty()) throw;
      const std::string_view w = e.what();
      const size_t k = w.find("] ");
      throw wrong(std::string(k == std::string_view::npos ? w : w.substr(k + 2)));
    }
  }
}

// json_get of j's member `key` (nlohmann's out_of_range 403 when it is missing), naming the key.
template <typename T>
T json_at(const nlohmann::json& j, const char* key) {
  return json_get<T>(j.at(key), key);
}

}  // namespace agld
