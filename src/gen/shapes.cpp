// agld gen's shapes: Criteo's and KDD Cup 2012's numeric features and field sizes, and the
// fields laid out over the feature range (shapes.hpp).
#include "gen/shapes.hpp"

#include <iterator>
#include <numeric>
#include <utility>

#include "gen/det_math.hpp"

namespace agld {
namespace gen {
namespace {

constexpr double kZipfExponent = 1.1;

// Criteo (Kaggle display advertising): 13 counts, 26 categorical fields whose sizes are the
// Kaggle cardinalities capped so that they fill [14, 1,000,000] exactly.
constexpr NumericSpec kCriteoNumeric[] = {
    {1.0, 1.1}, {3.0, 1.2},  {6.0, 1.0}, {2.0, 1.3}, {40.0, 0.9}, {8.0, 1.1}, {3.0, 1.2},
    {6.0, 1.4}, {20.0, 1.0}, {0.5, 1.5}, {1.5, 1.2}, {0.5, 1.6},  {4.0, 1.1}};
constexpr uint32_t kCriteoFields[] = {1460,  583,  122778, 122778, 305, 24,     12517,  633,   3,
                                      93145, 5683, 122778, 3194,   27,  14992,  122778, 10,    5652,
                                      2173,  4,    122778, 18,     15,  122777, 105,    122777};
constexpr uint64_t kCriteoFeatures = 1000000;

// KDD Cup 2012 track 2: display URL, ad, advertiser, depth, position, query, keyword,
// title, description, user, age; the user field is sized so that they fill d exactly.
constexpr uint32_t kKdd12Fields[] = {26273,   641707,  14847,   3,        3, 26243606,
                                     1249785, 4051441, 3171830, 19286951, 6};
constexpr uint64_t kKdd12Features = 54686452;

Field make_field(uint32_t begin, uint32_t size) {
  Field f;
  f.begin = begin;
  f.size = size;
  uint64_t n = size;
  uint64_t a = static_cast<uint64_t>(static_cast<double>(n) * 0.6180339887498949) | 1;
  while (n > 1 && std::gcd(a % n, n) != 1) ++a;
  f.mult = n > 1 ? a % n : 0;
  f.shift = static_cast<uint64_t>(static_cast<double>(n) * 0.4142135623730950) % n;
  f.inv_size = 1 / static_cast<double>(n);
  f.zipf_c = det_exp((1 - kZipfExponent) * det_log(static_cast<double>(n) + 1)) - 1;
  return f;
}

}  // namespace

Status make_shape(const std::string& name, Shape* out) {
  Shape s;
  s.info.name = name;
  uint64_t next = 1;
  auto add_fields = [&](const uint32_t* sizes, size_t count) {
    for (size_t k = 0; k < count; ++k) {
      s.fields.push_back(make_field(static_cast<uint32_t>(next), sizes[k]));
      next += sizes[k];
    }
  };
  if (name == "criteo") {
    s.numeric.assign(std::begin(kCriteoNumeric), std::end(kCriteoNumeric));
    next += s.numeric.size();
    add_fields(kCriteoFields, std::size(kCriteoFields));
    s.info.features = kCriteoFeatures;
    s.info.target_positive_rate = 0.25;
  } else if (name == "kdd12") {
    add_fields(kKdd12Fields, std::size(kKdd12Fields));
    s.info.features = kKdd12Features;
    s.info.target_positive_rate = 0.04;
  } else {
    return Status::invalid_argument("unknown shape '" + name + "' (expected criteo or kdd12)");
  }
  if (next - 1 != s.info.features) {
    return Status::internal("shape " + name + ": the fields do not fill the feature range");
  }
  s.info.numeric = static_cast<uint32_t>(s.numeric.size());
  s.info.fields = static_cast<uint32_t>(s.fields.size());
  *out = std::move(s);
  return Status::ok();
}

}  // namespace gen

Status gen_shape_info(const std::string& shape, GenShapeInfo* out) {
  gen::Shape s;
  AGLD_RETURN_IF_ERROR(gen::make_shape(shape, &s));
  *out = s.info;
  return Status::ok();
}

}  // namespace agld
