// agld scan STORE --access ca|rr|ra|br --batch N --passes P --memory SIZE [--seed S] [--json]
// Runs a reader with no sampler and reports its statistics and throughput.
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "agld/reader.hpp"
#include "agld/store.hpp"
#include "cli_common.hpp"

namespace agld::cli {
namespace {

struct ScanArgs {
  std::string store;
  std::string access = "ca";
  size_t batch = 1024;
  double passes = 1;
  std::string memory = "1G";
  uint64_t seed = 0;
  size_t streams = 1;
  std::string prefetch = "auto";
  size_t decode_threads = 0;
  bool json = false;
};

uint64_t current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

uint64_t peak_rss_bytes() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

// Bytes this process has caused to be read from storage (/proc/self/io read_bytes).
std::optional<uint64_t> disk_read_bytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "read_bytes:") return value;
  }
  return std::nullopt;
}

int run_scan(const ScanArgs& a) {
  const uint64_t budget = parse_size(a.memory);
  if (!(a.passes > 0) || !std::isfinite(a.passes)) {
    return fail(Status::invalid_argument("--passes must be a positive number"));
  }
  std::unique_ptr<Store> store;
  Status st = Store::open(a.store, &store);
  if (!st.is_ok()) return fail(st);
  // With no sampler, the reader's share is the budget less what the process already holds.
  const uint64_t baseline = current_rss_bytes();
  ReaderOptions opt;
  opt.order = a.access;
  opt.batch_size = a.batch;
  opt.seed = a.seed;
  if (a.streams > 1) {  // seeds seed, seed + 1, ...: each stream a batch / streams rows a batch
    for (size_t s = 0; s < a.streams; ++s) opt.streams.push_back(a.seed + s);
  }
  if (a.prefetch != "auto") opt.prefetch = std::stoul(a.prefetch);
  opt.decode_threads = a.decode_threads;
  opt.memory = budget > baseline ? budget - baseline : 0;
  std::unique_ptr<Reader> reader;
  st = Reader::open(*store, opt, &reader);
  if (!st.is_ok()) {
    if (st.code() == Status::Code::kInvalidArgument &&
        opt.memory < reader_min_memory(*store, opt) &&
        reader_orders().end() !=
            std::find_if(reader_orders().begin(), reader_orders().end(),
                         [&](const ReaderOrderInfo& o) { return o.name == a.access; })) {
      return fail(Status::invalid_argument(fmt::format(
          "--memory {} is too small: the process holds {} before reading, and the reader needs "
          "at least {} more (use --memory {} or more, or a smaller --prefetch or --batch)",
          a.memory, human_bytes(static_cast<double>(baseline)),
          human_bytes(static_cast<double>(reader_min_memory(*store, opt))),
          human_bytes(static_cast<double>(baseline + reader_min_memory(*store, opt))))));
    }
    return fail(st);
  }
  const uint64_t n_rows = store->meta().rows;
  const auto target = static_cast<uint64_t>(std::ceil(a.passes * static_cast<double>(n_rows)));
  const auto io0 = disk_read_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  Batch batch;
  uint64_t rows = 0, nnz = 0;
  double label_sum = 0;
  auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::optional<double> first_pass;  // when the batch that completes the first pass came
  uint64_t first_pass_rows = 0;       // rows by then
  do {
    st = reader->next(&batch);
    if (!st.is_ok()) return fail(st);
    rows += batch.size();
    nnz += batch.nnz();
    for (double y : batch.labels) label_sum += y;
    if (!first_pass && rows >= n_rows) {
      first_pass = since_start();
      first_pass_rows = rows;
    }
  } while (rows < target);
  const double seconds = since_start();
  const auto io1 = disk_read_bytes();
  const ReaderStats& s = reader->stats();
  const double rate = seconds > 0 ? static_cast<double>(rows) / seconds : 0;
  const uint64_t peak = peak_rss_bytes();
  if (a.json) {
    nlohmann::json j;
    j["store"] = store->path();
    j["access"] = a.access;
    j["batch"] = a.batch;
    j["seed"] = a.seed;
    j["prefetch"] = reader->options().prefetch;
    j["decode_threads"] = a.decode_threads;
    j["rows"] = rows;
    j["batches"] = s.batches;
    j["passes"] = s.passes;
    j["nnz"] = nnz;
    j["label_sum"] = label_sum;
    j["seconds"] = seconds;
    j["rows_per_s"] = rate;
    // The rate after the first pass (a store that fits: passes from memory); null within it.
    j["first_pass_seconds"] = first_pass ? nlohmann::json(*first_pass) : nlohmann::json();
    j["later_rows_per_s"] = first_pass && rows > first_pass_rows && seconds > *first_pass
                                ? nlohmann::json(static_cast<double>(rows - first_pass_rows) /
                                                 (seconds - *first_pass))
                                : nlohmann::json();
    j["chunk_visits"] = s.chunk_visits;
    j["chunks_decompressed"] = s.chunks_decompressed;
    j["cache_hits"] = s.cache_hits;
    j["cache_misses"] = s.cache_misses;
    j["bytes_read"] = s.bytes_read;
    j["bytes_decompressed"] = s.bytes_decompressed;
    j["direct_rows"] = s.direct_rows;
    j["row_index_reads"] = s.row_index_reads;
    j["disk_read_bytes"] = io0 && io1 ? nlohmann::json(*io1 - *io0) : nlohmann::json();
    j["wait_seconds"] = s.wait_seconds;
    j["cache_capacity_bytes"] = s.cache_capacity_bytes;
    j["cache_peak_bytes"] = s.cache_peak_bytes;
    j["decoded_peak_bytes"] = s.decoded_peak_bytes;
    j["whole_store_cached"] = s.whole_store_cached;
    j["memory_bytes"] = budget;
    j["baseline_rss_bytes"] = baseline;
    j["reader_memory_bytes"] = opt.memory;
    j["peak_rss_bytes"] = peak;
    std::cout << j.dump(2) << std::endl;
    return kExOk;
  }
  fmt::memory_buffer b;
  auto line = [&](const char* key, const std::string& value) {
    fmt::format_to(std::back_inserter(b), "{:<10} {}\n", key, value);
  };
  line("scan", fmt::format("{}: order {}, batches of {}, seed {}, prefetch {}, decode threads {}",
                           store->path(), a.access, a.batch, a.seed, reader->options().prefetch,
                           a.decode_threads ? std::to_string(a.decode_threads) : "auto"));
  line("rows", fmt::format("{} ({:.3g} passes, {} batches) in {:.3f} s: {:.4g} rows/s", rows,
                           s.passes, s.batches, seconds, rate));
  line("chunks", fmt::format("{} visits: {} cache hits, {} misses (decompressed)", s.chunk_visits,
                             s.cache_hits, s.cache_misses));
  if (s.direct_rows > 0) {
    line("direct", fmt::format("{} rows read on their own; {} chunks' row indexes read",
                               s.direct_rows, s.row_index_reads));
  }
  line("bytes", fmt::format("read {} from the store ({} from disk), decompressed to {}",
                            human_bytes(static_cast<double>(s.bytes_read)),
                            io0 && io1 ? human_bytes(static_cast<double>(*io1 - *io0)) : "?",
                            human_bytes(static_cast<double>(s.bytes_decompressed))));
  line("cache", fmt::format("capacity {}, peak {}; decoded chunks peak {}{}",
                            human_bytes(static_cast<double>(s.cache_capacity_bytes)),
                            human_bytes(static_cast<double>(s.cache_peak_bytes)),
                            human_bytes(static_cast<double>(s.decoded_peak_bytes)),
                            s.whole_store_cached ? " (the whole store fits)" : ""));
  line("waiting", fmt::format("{:.3f} s ({:.0f}% of the scan)", s.wait_seconds,
                              seconds > 0 ? 100 * s.wait_seconds / seconds : 0.0));
  line("memory", fmt::format("budget {}: process baseline {}, reader share {}; peak RSS {}",
                             human_bytes(static_cast<double>(budget)),
                             human_bytes(static_cast<double>(baseline)),
                             human_bytes(static_cast<double>(opt.memory)),
                             human_bytes(static_cast<double>(peak))));
  std::fwrite(b.data(), 1, b.size(), stdout);
  return kExOk;
}

}  // namespace

void add_scan(Cli& cli) {
  auto a = std::make_shared<ScanArgs>();
  std::string orders;
  for (const ReaderOrderInfo& o : reader_orders()) orders += "\n  " + o.name + ": " + o.summary;
  CLI::App* c = cli.app.add_subcommand(
      "scan", "Read a store through a reader, with no sampler, and report throughput");
  c->add_option("store", a->store, "the store")->required();
  c->add_option("--access", a->access, "access order:" + orders)->default_val("ca");
  c->add_option("--batch", a->batch, "rows a batch")->default_val(1024)->check(CLI::PositiveNumber);
  c->add_option("--passes", a->passes, "passes over the data (may be a fraction, e.g. 0.01)")
      ->default_val(1.0);
  c->add_option("--memory", a->memory, "memory budget of the whole process")
      ->default_val("1G")
      ->check(size_validator());
  c->add_option("--seed", a->seed, "seed of the access order")->default_val(0);
  c->add_option("--streams", a->streams,
                "sequences of the order read at once, seeds SEED, SEED+1, ... (as sample's chains read them; "
                "--batch must divide among them; --passes counts the rows of all)")
      ->default_val(1)
      ->check(CLI::PositiveNumber);
  c->add_option("--prefetch", a->prefetch,
                "chunk visits prepared ahead (0: no thread; auto: as deep as the budget allows, "
                "4 to 16)")
      ->default_val("auto")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "auto" || (!v.empty() && v.size() < 6 &&
                                v.find_first_not_of("0123456789") == std::string::npos)) {
              return "";
            }
            return "expected auto or a number of chunk visits, got '" + v + "'";
          },
          "auto|N"));
  c->add_option("--decode-threads", a->decode_threads,
                "threads decompressing chunks, with --prefetch > 0 (0: one per core, at most 4; 4 more read them)")
      ->default_val(0);
  c->add_flag("--json", a->json, "print JSON");
  c->callback([&cli, a] { cli.exit_code = run_scan(*a); });
}

}  // namespace agld::cli
