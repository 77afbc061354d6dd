#include "store/format.hpp"

#include <nlohmann/json.hpp>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "store/crc32c.hpp"
#include "common/json_get.hpp"

namespace agld::format {

using json = nlohmann::json;

void encode_header(std::byte* out) {
  put<uint64_t>(out, kMagic);
  put<uint32_t>(out + 8, kFormatVersion);
  put<uint32_t>(out + 12, 0);
}

void encode_footer(const Footer& f, std::byte* out) {
  std::memset(out, 0, kFooterSize);
  put<uint64_t>(out + 0, f.meta_offset);
  put<uint64_t>(out + 8, f.meta_size);
  put<uint64_t>(out + 16, f.index_offset);
  put<uint64_t>(out + 24, f.chunk_count);
  put<uint32_t>(out + 32, f.meta_crc);
  put<uint32_t>(out + 36, f.index_crc);
  put<uint32_t>(out + 48, f.version);
  put<uint32_t>(out + 52, crc32c::value(out, 52));
  put<uint64_t>(out + 56, kMagic);
}

Status decode_footer(const std::byte* in, uint32_t header_version, Footer* f) {
  if (get<uint64_t>(in + 56) != kMagic) {
    return Status::corruption("not an agld store, or truncated (no store magic at the end)");
  }
  f->version = get<uint32_t>(in + 48);
  if (f->version != kFormatVersion) {
    if (f->version > kFormatVersion && f->version == header_version) {
      return Status::not_supported("store format version " + std::to_string(f->version) +
                                   " is newer than this agld supports (" +
                                   std::to_string(kFormatVersion) + "); upgrade agld");
    }
    return Status::corruption("footer: bad format version " + std::to_string(f->version));
  }
  if (get<uint32_t>(in + 52) != crc32c::value(in, 52)) {
    return Status::corruption("footer: checksum mismatch");
  }
  if (get<uint64_t>(in + 40) != 0) return Status::corruption("footer: reserved bytes are not zero");
  f->meta_offset = get<uint64_t>(in + 0);
  f->meta_size = get<uint64_t>(in + 8);
  f->index_offset = get<uint64_t>(in + 16);
  f->chunk_count = get<uint64_t>(in + 24);
  f->meta_crc = get<uint32_t>(in + 32);
  f->index_crc = get<uint32_t>(in + 36);
  return Status::ok();
}

void encode_index_entry(const ChunkInfo& c, std::byte* out) {
  put<uint64_t>(out + 0, c.offset);
  put<uint64_t>(out + 8, c.first_row);
  put<uint32_t>(out + 16, c.stored_size);
  put<uint32_t>(out + 20, c.raw_size);
  put<uint32_t>(out + 24, c.row_count);
  put<uint32_t>(out + 28, c.nnz);
  put<uint32_t>(out + 32, c.crc);
  put<uint8_t>(out + 36, static_cast<uint8_t>(c.codec));
  put<uint8_t>(out + 37, c.flags);
  put<uint16_t>(out + 38, 0);
}

ChunkInfo decode_index_entry(const std::byte* in) {
  ChunkInfo c;
  c.offset = get<uint64_t>(in + 0);
  c.first_row = get<uint64_t>(in + 8);
  c.stored_size = get<uint32_t>(in + 16);
  c.raw_size = get<uint32_t>(in + 20);
  c.row_count = get<uint32_t>(in + 24);
  c.nnz = get<uint32_t>(in + 28);
  c.crc = get<uint32_t>(in + 32);
  c.codec = static_cast<Codec>(get<uint8_t>(in + 36));
  c.flags = get<uint8_t>(in + 37);
  return c;
}

std::string encode_meta(const StoreMeta& m) {
  json j;
  j["format_version"] = kFormatVersion;
  j["format_minor"] = kFormatMinor;
  j["rows"] = m.rows;
  j["features"] = m.features;
  j["nnz"] = m.nnz;
  j["label_kind"] = m.label_kind == LabelKind::kBinary ? "binary" : "real";
  if (m.label_kind == LabelKind::kBinary) {
    j["label_positive"] = m.label_positive;
    json counts = json::array();
    for (auto& [label, count] : m.label_counts) counts.push_back({{"label", label}, {"count", count}});
    j["label_counts"] = counts;
  } else {
    j["label_min"] = m.label_min;
    j["label_max"] = m.label_max;
    j["label_mean"] = m.label_mean;
  }
  j["row_sq_norm_max"] = m.row_sq_norm_max;
  j["row_sq_norm_sum"] = m.row_sq_norm_sum;
  j["empty_rows"] = m.empty_rows;
  j["index_base"] = m.index_base;
  json sources = json::array();
  for (auto& s : m.sources) {
    json e{{"name", s.name}};
    e["size"] = s.size ? json(*s.size) : json(nullptr);
    e["mtime"] = s.mtime ? json(*s.mtime) : json(nullptr);
    sources.push_back(e);
  }
  j["sources"] = sources;
  const StoreOptions& o = m.options;
  j["options"] = {{"compression", o.compression},
                  {"level", o.level},
                  {"chunk_rows", o.chunk_rows},
                  {"chunk_bytes", o.chunk_bytes},
                  {"index_base", o.index_base},
                  {"features", o.features ? json(*o.features) : json(nullptr)},
                  {"task", o.task},
                  {"shuffle", o.shuffle},
                  {"seed", o.seed},
                  {"test_fraction", o.test_fraction},
                  {"part", o.part},
                  {"skip_bad_lines", o.skip_bad_lines},
                  {"raw_literals", o.raw_literals}};
  j["skipped_lines"] = m.skipped_lines;
  j["created_by"] = m.created_by;
  if (!m.fields.empty()) {
    json fields = json::array();
    for (const FeatureField& f : m.fields) fields.push_back({{"first", f.first}, {"count", f.count}});
    j["fields"] = fields;
  }
  return j.dump(2);
}

namespace {
template <typename T>
void read_opt(const json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) *out = json_get<T>(*it, key);
}
}  // namespace

Status decode_meta(const std::string& text, StoreMeta* m) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::corruption("metadata: not a JSON object");
  try {
    m->format_minor = 0;
    read_opt(j, "format_minor", &m->format_minor);
    m->rows = json_at<uint64_t>(j, "rows");
    m->features = json_at<uint64_t>(j, "features");
    m->nnz = json_at<uint64_t>(j, "nnz");
    std::string kind = json_at<std::string>(j, "label_kind");
    if (kind == "binary") {
      m->label_kind = LabelKind::kBinary;
      m->label_positive = json_at<double>(j, "label_positive");
      m->label_counts.clear();
      for (auto& e : j.at("label_counts")) {
        m->label_counts.emplace_back(json_at<double>(e, "label"), json_at<uint64_t>(e, "count"));
      }
    } else if (kind == "real") {
      m->label_kind = LabelKind::kReal;
      read_opt(j, "label_min", &m->label_min);
      read_opt(j, "label_max", &m->label_max);
      read_opt(j, "label_mean", &m->label_mean);
    } else {
      return Status::corruption("metadata: unknown label_kind '" + kind + "'");
    }
    read_opt(j, "row_sq_norm_max", &m->row_sq_norm_max);
    read_opt(j, "row_sq_norm_sum", &m->row_sq_norm_sum);
    read_opt(j, "empty_rows", &m->empty_rows);
    read_opt(j, "index_base", &m->index_base);
    m->sources.clear();
    if (auto it = j.find("sources"); it != j.end()) {
      for (auto& e : *it) {
        SourceInfo s;
        s.name = json_at<std::string>(e, "name");
        if (e.contains("size") && !e["size"].is_null()) s.size = json_get<uint64_t>(e["size"], "size");
        if (e.contains("mtime") && !e["mtime"].is_null()) s.mtime = json_get<int64_t>(e["mtime"], "mtime");
        m->sources.push_back(std::move(s));
      }
    }
    if (auto it = j.find("options"); it != j.end() && it->is_object()) {
      const json& o = *it;
      StoreOptions& opt = m->options;
      read_opt(o, "compression", &opt.compression);
      read_opt(o, "level", &opt.level);
      read_opt(o, "chunk_rows", &opt.chunk_rows);
      read_opt(o, "chunk_bytes", &opt.chunk_bytes);
      read_opt(o, "index_base", &opt.index_base);
      if (o.contains("features") && !o["features"].is_null()) {
        opt.features = json_get<uint64_t>(o["features"], "features");
      }
      read_opt(o, "task", &opt.task);
      read_opt(o, "shuffle", &opt.shuffle);
      read_opt(o, "seed", &opt.seed);
      read_opt(o, "test_fraction", &opt.test_fraction);
      read_opt(o, "part", &opt.part);
      read_opt(o, "skip_bad_lines", &opt.skip_bad_lines);
      read_opt(o, "raw_literals", &opt.raw_literals);
    }
    read_opt(j, "skipped_lines", &m->skipped_lines);
    read_opt(j, "created_by", &m->created_by);
    m->fields.clear();
    if (auto it = j.find("fields"); it != j.end() && !it->is_null()) {
      if (!it->is_array()) return Status::corruption("metadata: fields is not an array");
      for (const json& e : *it) {
        FeatureField f{json_at<uint64_t>(e, "first"), json_at<uint64_t>(e, "count")};
        const uint64_t after = m->fields.empty() ? 0 : m->fields.back().first + m->fields.back().count;
        if (f.count == 0 || f.first < after || f.first > m->features || f.count > m->features - f.first) {
          return Status::corruption("metadata: field " + std::to_string(m->fields.size() + 1) + " (first " +
                                    std::to_string(f.first) + ", count " + std::to_string(f.count) +
                                    ") is empty, overlaps the one before or ends past the " +
                                    std::to_string(m->features) + " features");
        }
        m->fields.push_back(f);
      }
    }
  } catch (const json::exception& e) {
    return Status::corruption(std::string("metadata: ") + e.what());
  }
  return Status::ok();
}

// Written as four sequential byte streams against one stream of u32, which GCC vectorizes.
void byte_shuffle4(const std::byte* src, std::byte* dst, uint64_t n) {
  auto* s = reinterpret_cast<const uint8_t*>(src);
  auto* d0 = reinterpret_cast<uint8_t*>(dst);
  uint8_t* d1 = d0 + n;
  uint8_t* d2 = d1 + n;
  uint8_t* d3 = d2 + n;
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, s + 4 * i, 4);
    d0[i] = static_cast<uint8_t>(v);
    d1[i] = static_cast<uint8_t>(v >> 8);
    d2[i] = static_cast<uint8_t>(v >> 16);
    d3[i] = static_cast<uint8_t>(v >> 24);
  }
}

void byte_unshuffle4(const Planes4& src, std::byte* dst, uint64_t n) {
  auto* d = reinterpret_cast<uint8_t*>(dst);
  uint64_t i = 0;
#if defined(__SSE2__)
  const auto* s0 = reinterpret_cast<const uint8_t*>(src[0]);
  const auto* s1 = reinterpret_cast<const uint8_t*>(src[1]);
  const auto* s2 = reinterpret_cast<const uint8_t*>(src[2]);
  const auto* s3 = reinterpret_cast<const uint8_t*>(src[3]);
  // 16 elements a step: interleave the planes' bytes in pairs, then the pairs.
  for (; i + 16 <= n; i += 16) {
    const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + i));
    const __m128i a1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1 + i));
    const __m128i a2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s2 + i));
    const __m128i a3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s3 + i));
    const __m128i lo01 = _mm_unpacklo_epi8(a0, a1), hi01 = _mm_unpackhi_epi8(a0, a1);
    const __m128i lo23 = _mm_unpacklo_epi8(a2, a3), hi23 = _mm_unpackhi_epi8(a2, a3);
    auto* out = reinterpret_cast<__m128i*>(d + 4 * i);
    _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));
  }
#endif
  for (; i < n; ++i) {
    const uint32_t v = unshuffled4(src, i);
    std::memcpy(d + 4 * i, &v, 4);
  }
}

void pack_plane(const std::byte* plane, uint64_t n, unsigned w, std::byte* out) {
  if (w == 8) {
    if (n > 0) std::memcpy(out, plane, n);
    return;
  }
  if (w == 0) return;
  const auto* s = reinterpret_cast<const uint8_t*>(plane);
  auto* d = reinterpret_cast<uint8_t*>(out);
  const unsigned per = 8 / w;
  std::memset(d, 0, packed_plane_size(n, w));
  for (uint64_t i = 0; i < n; ++i) d[i / per] = static_cast<uint8_t>(d[i / per] | s[i] << (w * (i % per)));
}

std::string parse_packed_column(const std::byte* at, uint64_t avail, unsigned k, uint64_t n,
                                PackedColumn* out) {
  if (avail < k) return "packed column: no room for its widths";
  uint64_t size = k;
  for (unsigned b = 0; b < k; ++b) {
    const unsigned w = static_cast<uint8_t>(at[b]);
    if (!plane_width_valid(w)) {
      return "packed column: plane " + std::to_string(b) + " of width " + std::to_string(w);
    }
    out->width[b] = w;
    out->plane[b] = w ? at + size : nullptr;
    size += packed_plane_size(n, w);
  }
  if (size > avail) return "packed column of " + std::to_string(size) + " bytes past the chunk";
  out->size = size;
  return {};
}

void plane_widths(const std::byte* planes, unsigned k, uint64_t n, unsigned* widths) {
  const auto* s = reinterpret_cast<const uint8_t*>(planes);
  for (unsigned b = 0; b < k; ++b) {
    uint8_t any = 0;
    for (uint64_t i = 0; i < n; ++i) any = static_cast<uint8_t>(any | s[b * n + i]);
    widths[b] = plane_width(any);
  }
}

uint64_t packed_column_size(const unsigned* widths, unsigned k, uint64_t n) {
  uint64_t size = k;
  for (unsigned b = 0; b < k; ++b) size += packed_plane_size(n, widths[b]);
  return size;
}

uint64_t write_packed_column(const std::byte* planes, const unsigned* widths, unsigned k,
                             uint64_t n, std::byte* out) {
  uint64_t size = k;
  for (unsigned b = 0; b < k; ++b) {
    out[b] = static_cast<std::byte>(widths[b]);
    pack_plane(planes + b * n, n, widths[b], out + size);
    size += packed_plane_size(n, widths[b]);
  }
  return size;
}

}  // namespace agld::format
