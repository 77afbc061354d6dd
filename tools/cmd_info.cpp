// agld info STORE [--json] [--verify]: what a store holds, how often its features occur
#include <sys/stat.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "agld/feature_stats.hpp"
#include "agld/store.hpp"
#include "cli_common.hpp"

namespace agld::cli {
namespace {

struct InfoArgs {
  std::string store;
  bool json = false;
  bool verify = false;
  int threads = 0;
};

// Reads every chunk (in parallel), checking its CRC and contents, and sets *seconds to the
// time taken. Reports the first failure in chunk order.
Status verify(const Store& s, int threads, double* seconds) {
  std::unique_ptr<tbb::global_control> limit;
  if (threads > 0) {
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                  static_cast<size_t>(threads));
  }
  std::mutex mu;
  size_t first_bad = s.chunk_count();
  Status bad;
  auto t0 = std::chrono::steady_clock::now();
  tbb::parallel_for(tbb::blocked_range<size_t>(0, s.chunk_count(), 1), [&](const tbb::blocked_range<size_t>& r) {
    DecodedChunk chunk;
    for (size_t k = r.begin(); k < r.end(); ++k) {
      Status st = s.read_chunk(k, &chunk);
      if (!st.is_ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (k < first_bad) {
          first_bad = k;
          bad = st;
        }
      }
    }
  });
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return bad;
}

// How often the features occur: over the features stored in at least one row, the fewest
// rows, the median and the most (nullopt when no feature is), and how many are in none.
// The median comes from an exact histogram of the counts, not from a copy of them: a
// count below 2^16 has a slot of its own (512 KiB in all), a larger one an entry in a map.
// d counts that add up to nnz have fewer than sqrt(2 nnz) + 1 distinct values, so the map
// stays small (under 57 thousand entries for kdd12's 1.6 billion nonzeros) whatever d is.
struct FeatureCounts {
  std::optional<uint64_t> min, median, max;
  uint64_t empty = 0;
  FeatureStatsSource source = FeatureStatsSource::kStored;
};

Status feature_counts(const Store& s, FeatureCounts* out) {
  std::vector<uint64_t> small(uint64_t{1} << 16);
  std::map<uint64_t, uint64_t> large;
  AGLD_RETURN_IF_ERROR(scan_feature_stats(
      s,
      [&](const FeatureStatsBlock& b) {
        for (uint64_t c : b.count) {
          if (c < small.size()) {
            ++small[c];
          } else {
            ++large[c];
          }
        }
        return Status::ok();
      },
      &out->source));
  out->empty = small[0];
  const uint64_t seen = s.meta().features - out->empty;
  if (seen == 0) return Status::ok();
  // The lower median: the ceil(seen / 2)-th smallest count of the features seen.
  const uint64_t rank = (seen + 1) / 2;
  uint64_t below = 0;
  auto visit = [&](uint64_t count, uint64_t n) {
    if (!out->min) out->min = count;
    if (!out->median && below + n >= rank) out->median = count;
    below += n;
    out->max = count;
  };
  for (uint64_t c = 1; c < small.size(); ++c) {
    if (small[c]) visit(c, small[c]);
  }
  for (const auto& [c, n] : large) visit(c, n);
  return Status::ok();
}

// Whether the store's recorded source has changed since conversion (nullopt: cannot tell).
std::optional<bool> stale(const SourceInfo& src) {
  if (!src.size || !src.mtime || src.name == "-") return std::nullopt;
  struct stat st;
  if (::stat(src.name.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.st_size) != *src.size || st.st_mtim.tv_sec != *src.mtime;
}

// "26 complete one-hot fields: 14-1473 (1460 levels), ..., 877224-1000000 (122777 levels)",
// features in the source's numbering (index base added); the middle left out when many.
std::string fields_text(const StoreMeta& m) {
  if (m.fields.empty()) return "none recorded";
  const uint64_t base = static_cast<uint64_t>(m.index_base);
  auto one = [&](const FeatureField& f) {
    const uint64_t first = f.first + base, last = f.first + f.count - 1 + base;
    return f.count == 1 ? fmt::format("{} (1 level)", first)
                        : fmt::format("{}-{} ({} levels)", first, last, f.count);
  };
  const size_t n = m.fields.size();
  std::string s = fmt::format("{} complete one-hot field{}: ", n, n == 1 ? "" : "s");
  constexpr size_t kShown = 6;  // all of them up to this many; else the first 4 and the last
  for (size_t k = 0; k < n; ++k) {
    if (n > kShown && k == 4) {
      s += fmt::format("... ({} more), ", n - 5);
      k = n - 1;
    }
    s += one(m.fields[k]);
    if (k + 1 < n) s += ", ";
  }
  return s;
}

int run_info(const InfoArgs& a) {
  std::unique_ptr<Store> store;
  Status st = Store::open(a.store, &store);
  if (!st.is_ok()) return fail(st);
  const StoreMeta& m = store->meta();
  uint64_t raw = 0, stored = 0, tables = 0, decoded = 0;
  for (size_t k = 0; k < store->chunk_count(); ++k) {
    raw += store->chunk(k).raw_size;
    stored += store->chunk(k).stored_size;
    tables += (store->chunk(k).flags & kChunkValueDict) != 0;
    decoded += decoded_bytes(store->chunk(k));
  }
  double verify_seconds = 0;
  if (a.verify) {
    st = verify(*store, a.threads, &verify_seconds);
    if (!st.is_ok()) return fail(st);
    st = store->verify_metadata_region();
    if (!st.is_ok()) return fail(st);
  }
  // The statistics are checked as they are read: a damaged record fails here, --verify or not.
  FeatureCounts fc;
  st = feature_counts(*store, &fc);
  if (!st.is_ok()) return fail(st);
  const bool stored_stats = fc.source == FeatureStatsSource::kStored;
  uint64_t stats_bytes = 0;
  if (const auto& sec = store->feature_stats_section()) {
    stats_bytes = sec->table_offset + 16 * uint64_t{sec->block_count} + 64 - sec->offset;
  }
  auto opt_json = [](const std::optional<uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  const double ratio = stored ? static_cast<double>(raw) / static_cast<double>(stored) : 1.0;
  const double density =
      m.rows && m.features ? static_cast<double>(m.nnz) / (static_cast<double>(m.rows) * static_cast<double>(m.features)) : 0;
  const double norm_mean = m.rows ? m.row_sq_norm_sum / static_cast<double>(m.rows) : 0;
  const bool binary = m.label_kind == LabelKind::kBinary;
  if (a.json) {
    nlohmann::json j;
    j["path"] = store->path();
    j["format_version"] = kFormatVersion;
    j["format_minor"] = m.format_minor;
    j["created_by"] = m.created_by;
    j["rows"] = m.rows;
    j["features"] = m.features;
    j["nnz"] = m.nnz;
    j["density"] = density;
    j["chunks"] = store->chunk_count();
    j["value_table_chunks"] = tables;  // chunks whose values are codes into a table
    j["label_kind"] = binary ? "binary" : "real";
    if (binary) {
      j["label_positive"] = m.label_positive;
      nlohmann::json counts = nlohmann::json::array();
      for (auto& [label, count] : m.label_counts) {
        counts.push_back({{"label", label}, {"maps_to", label == m.label_positive ? 1 : -1}, {"count", count}});
      }
      j["label_counts"] = counts;
    } else {
      j["label_min"] = m.label_min;
      j["label_max"] = m.label_max;
      j["label_mean"] = m.label_mean;
    }
    j["row_sq_norm_max"] = m.row_sq_norm_max;
    j["row_sq_norm_mean"] = norm_mean;
    j["row_sq_norm_sum"] = m.row_sq_norm_sum;
    j["empty_rows"] = m.empty_rows;
    j["index_base"] = m.index_base;
    j["compression"] = m.options.compression;
    j["level"] = m.options.level;
    j["raw_bytes"] = raw;
    j["stored_bytes"] = stored;
    j["decoded_bytes"] = decoded;  // the whole store decoded in memory (the reader's cache)
    j["file_bytes"] = store->file_size();
    j["compression_ratio"] = ratio;
    j["skipped_lines"] = m.skipped_lines;
    // Rows a feature is stored in, over the features in at least one; "empty": in none.
    j["feature_counts"] = {{"min", opt_json(fc.min)},
                           {"median", opt_json(fc.median)},
                           {"max", opt_json(fc.max)},
                           {"empty", fc.empty},
                           {"source", stored_stats ? "stored" : "computed"}};
    j["feature_stats_bytes"] = stats_bytes;  // the recorded statistics in the file (0: none)
    // The complete one-hot fields as the metadata has them: 0-based first feature, count.
    nlohmann::json fields = nlohmann::json::array();
    for (const FeatureField& f : m.fields) fields.push_back({{"first", f.first}, {"count", f.count}});
    j["fields"] = fields;
    // Whether cyclic (ca) and block-reshuffle (br) access can trust the stored order.
    j["order"] = rows_shuffled(m) ? "shuffled" : "kept";
    j["order_seed"] = rows_shuffled(m) ? nlohmann::json(m.options.seed) : nlohmann::json();
    nlohmann::json sources = nlohmann::json::array();
    for (const SourceInfo& s : m.sources) {
      auto is_stale = stale(s);
      sources.push_back({{"name", s.name},
                         {"size", s.size ? nlohmann::json(*s.size) : nlohmann::json()},
                         {"mtime", s.mtime ? nlohmann::json(*s.mtime) : nlohmann::json()},
                         {"stale", is_stale ? nlohmann::json(*is_stale) : nlohmann::json()}});
    }
    j["sources"] = sources;
    const StoreOptions& o = m.options;
    j["options"] = {{"compression", o.compression}, {"level", o.level},
                    {"chunk_rows", o.chunk_rows},   {"chunk_bytes", o.chunk_bytes},
                    {"index_base", o.index_base},   {"features", o.features ? nlohmann::json(*o.features) : nlohmann::json()},
                    {"task", o.task},               {"shuffle", o.shuffle},
                    {"seed", o.seed},               {"test_fraction", o.test_fraction},
                    {"part", o.part},               {"skip_bad_lines", o.skip_bad_lines},
                    {"raw_literals", o.raw_literals}};
    if (a.verify) {
      j["verify"] = {{"ok", true},
                     {"seconds", verify_seconds},
                     {"stored_mb_per_s", static_cast<double>(stored) / 1e6 / verify_seconds},
                     {"raw_mb_per_s", static_cast<double>(raw) / 1e6 / verify_seconds}};
    }
    std::cout << j.dump(2) << std::endl;
    return kExOk;
  }
  fmt::memory_buffer b;
  auto line = [&](const char* key, const std::string& value) {
    fmt::format_to(std::back_inserter(b), "{:<12} {}\n", key, value);
  };
  line("store", store->path());
  line("format", fmt::format("version {}.{}, written by {}", kFormatVersion, m.format_minor, m.created_by));
  line("rows", fmt::format("{}", m.rows));
  line("features", fmt::format("{}", m.features));
  line("nnz", fmt::format("{} ({:.3g} per row, density {:.3g})", m.nnz,
                          m.rows ? static_cast<double>(m.nnz) / static_cast<double>(m.rows) : 0.0, density));
  if (binary) {
    std::string s = "binary:";
    for (auto& [label, count] : m.label_counts) {
      s += fmt::format(" {} ({} in the source) {};", label == m.label_positive ? "+1" : "-1", label, count);
    }
    if (!m.label_counts.empty()) s.pop_back();
    line("labels", s);
  } else {
    line("labels", fmt::format("real: min {}, max {}, mean {:.6g}", m.label_min, m.label_max, m.label_mean));
  }
  line("row norms", fmt::format("max |x|^2 {:.6g}, mean |x|^2 {:.6g}", m.row_sq_norm_max, norm_mean));
  line("empty rows", fmt::format("{}", m.empty_rows));
  line("feature use",
       fc.min ? fmt::format("rows a feature is in: rarest {}, median {}, commonest {}; {} of {} "
                            "features in no row",
                            *fc.min, *fc.median, *fc.max, fc.empty, m.features)
              : fmt::format("no feature is in any row ({} features)", m.features));
  line("", stored_stats ? fmt::format("(recorded at conversion: {} of per-feature statistics)",
                                      human_bytes(static_cast<double>(stats_bytes)))
                        : std::string("(computed now in a pass over the rows: this store has no "
                                      "per-feature statistics; converting it again records them)"));
  line("fields", fields_text(m));
  line("chunks", fmt::format("{} ({}{}{}; up to {} rows or {} raw)", store->chunk_count(), m.options.compression,
                             m.options.compression == "zstd"
                                 ? fmt::format(" level {}{}", m.options.level,
                                               m.options.raw_literals ? ", raw literals" : "")
                                 : "",
                             tables ? fmt::format(", value tables in {}", tables) : "",
                             m.options.chunk_rows, human_bytes(static_cast<double>(m.options.chunk_bytes))));
  line("bytes", fmt::format("raw {}, stored {} (compression ratio {:.2f}), file {}; decoded {}",
                            human_bytes(static_cast<double>(raw)), human_bytes(static_cast<double>(stored)),
                            ratio, human_bytes(static_cast<double>(store->file_size())),
                            human_bytes(static_cast<double>(decoded))));
  for (const SourceInfo& s : m.sources) {
    auto is_stale = stale(s);
    line("source", fmt::format("{}{}{}", s.name, s.size ? fmt::format(" ({} bytes)", *s.size) : "",
                               is_stale && *is_stale ? " STALE: changed since conversion" : ""));
  }
  const StoreOptions& o = m.options;
  line("order", rows_shuffled(m)
                    ? fmt::format("random (shuffled at conversion, seed {})", o.seed)
                    : std::string("as in the source (converted with --keep-order, or written before "
                                  "agld shuffled by default)"));
  line("conversion", fmt::format("index base {} ({}), task {}, seed {}, part {}{}{}", m.index_base,
                                 o.index_base, o.task, o.seed, o.part,
                                 o.test_fraction > 0 ? fmt::format(" (test fraction {})", o.test_fraction) : "",
                                 m.skipped_lines ? fmt::format(", {} bad lines skipped", m.skipped_lines) : ""));
  if (a.verify) {
    line("verify", fmt::format("ok: {} chunks, {} rows, metadata{}; {:.0f} MB/s stored, {:.0f} MB/s raw",
                               store->chunk_count(),
                               m.rows, stored_stats ? " and feature statistics" : "",
                               static_cast<double>(stored) / 1e6 / verify_seconds,
                               static_cast<double>(raw) / 1e6 / verify_seconds));
  }
  std::fwrite(b.data(), 1, b.size(), stdout);
  return kExOk;
}

}  // namespace

void add_info(Cli& cli) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* c = cli.app.add_subcommand("info", "Describe a store");
  c->add_option("store", a->store, "the store")->required();
  c->add_flag("--json", a->json, "print JSON");
  c->add_flag("--verify", a->verify,
              "read every chunk and check its checksum and contents, and the metadata's "
              "checksum (the feature statistics are checked whenever info reads them)");
  c->add_option("--threads", a->threads, "threads for --verify (0: all cores)")->default_val(0);
  c->callback([&cli, a] { cli.exit_code = run_info(*a); });
}

}  // namespace agld::cli
