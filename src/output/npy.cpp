// NumPy .npy files of float64 (format 1.0, C order): posterior.npy and diagnostics.npy are
// written with encode_npy_f64 and read back with decode_npy_f64 (`agld summary`).
#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <cstring>
#include <string_view>

#include "agld/run_output.hpp"

namespace agld {

static_assert(std::endian::native == std::endian::little, "npy files are read and written as little-endian");

std::string encode_npy_f64(uint64_t rows, uint64_t cols, std::span<const double> data) {
  std::string header = fmt::format("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols);
  // magic (6) + version (2) + header length (2) + header, padded with spaces and ended by
  // '\n' to a multiple of 64 bytes.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<uint16_t>(header.size());
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>(len >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(double));
  return out;
}

namespace {

// The value of 'key' in the header's dict, up to the next ',' at depth 0 or the closing '}'.
bool dict_value(std::string_view header, std::string_view key, std::string_view* value) {
  const std::string quoted = fmt::format("'{}'", key);
  size_t at = header.find(quoted);
  if (at == std::string_view::npos) return false;
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos) return false;
  size_t end = at + 1;
  int depth = 0;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string_view v = header.substr(at + 1, end - at - 1);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  *value = v;
  return true;
}

// "(12, 3)", "(12,)" -> the dimensions.
bool parse_shape(std::string_view v, std::vector<uint64_t>* dims) {
  if (v.size() < 2 || v.front() != '(' || v.back() != ')') return false;
  v = v.substr(1, v.size() - 2);
  while (!v.empty()) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    if (v.empty()) break;
    uint64_t n = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc()) return false;
    dims->push_back(n);
    v.remove_prefix(static_cast<size_t>(p - v.data()));
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    if (v.empty()) break;
    if (v.front() != ',') return false;
    v.remove_prefix(1);
  }
  return true;
}

}  // namespace

Status decode_npy_f64(ByteSpan file, NpyView* out) {
  auto bad = [](const std::string& what) { return Status::corruption("not a float64 .npy file as agld writes them: " + what); };
  if (file.size() < 10 || std::memcmp(file.data(), "\x93NUMPY", 6) != 0) return bad("no NumPy magic");
  const auto major = static_cast<unsigned>(file[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(file[8]) | static_cast<size_t>(file[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12) return bad("cut short in its header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(file[8 + i]) << (8 * i);
    start = 12;
  } else {
    return bad(fmt::format("format version {}", major));
  }
  if (file.size() - start < header_len) return bad("cut short in its header");
  const std::string_view header(reinterpret_cast<const char*>(file.data()) + start, header_len);
  std::string_view descr, order, shape;
  if (!dict_value(header, "descr", &descr) || !dict_value(header, "fortran_order", &order) ||
      !dict_value(header, "shape", &shape)) {
    return bad("a header without descr, fortran_order and shape");
  }
  if (descr != "'<f8'") return bad(fmt::format("dtype {}, expected '<f8'", descr));
  if (order != "False") return bad("Fortran order");
  std::vector<uint64_t> dims;
  if (!parse_shape(shape, &dims) || dims.empty() || dims.size() > 2) return bad(fmt::format("shape {}", shape));
  out->rows = dims[0];
  out->cols = dims.size() == 2 ? dims[1] : 1;
  const size_t offset = start + header_len;
  const uint64_t bytes = file.size() - offset;
  if (out->cols != 0 && out->rows > bytes / 8 / out->cols) {
    return bad(fmt::format("cut short: shape {} needs {} bytes of data, the file has {}", shape,
                           out->rows * out->cols * 8, bytes));
  }
  if (bytes != out->rows * out->cols * 8) {
    return bad(fmt::format("{} bytes of data, shape {} needs {}", bytes, shape, out->rows * out->cols * 8));
  }
  out->data = file.subspan(offset);
  return Status::ok();
}

double NpyView::at(uint64_t row, uint64_t col) const {
  double v;
  std::memcpy(&v, data.data() + 8 * (row * cols + col), sizeof v);
  return v;
}

}  // namespace agld
