// The tables of named units (access orders, models, snapshot strategies): lookup by name.
#pragma once

#include <algorithm>
#include <span>
#include <string_view>

namespace agld {

// The entry of table whose `name` is name, or nullptr.
template <typename Info>
const Info* find_by_name(std::span<const Info> table, std::string_view name) {
  auto it = std::find_if(table.begin(), table.end(), [&](const Info& i) { return i.name == name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace agld
