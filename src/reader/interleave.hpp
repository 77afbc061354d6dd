// Several sequences of one order through one reader (ReaderOptions::streams). Internal to
// the reader layer.
#pragma once

#include <memory>
#include <vector>

#include "reader/order.hpp"

namespace agld::reader {

// Yields `unit` rows of streams[0], then `unit` of streams[1], ..., and around again.
std::unique_ptr<OrderCursor> interleave(std::vector<std::unique_ptr<OrderCursor>> streams, size_t unit);

}  // namespace agld::reader
