// agld dump STORE [--rows A:B]
#include <fmt/format.h>

#include <cstdio>

#include "agld/store.hpp"
#include "cli_common.hpp"

namespace agld::cli {
namespace {

struct DumpArgs {
  std::string store;
  std::string rows;
  bool mapped = false;
};

// "A:B", "A:", ":B" or "A" (one row), 0-based and half-open like a Python slice.
Status parse_range(const std::string& s, uint64_t n, uint64_t* a, uint64_t* b) {
  *a = 0;
  *b = n;
  if (s.empty()) return Status::ok();
  auto num = [&](const std::string& t, uint64_t* out) {
    try {
      size_t pos;
      if (t.empty() || t[0] == '-') return false;
      *out = std::stoull(t, &pos);
      return pos == t.size();
    } catch (const std::exception&) {
      return false;
    }
  };
  const size_t colon = s.find(':');
  bool ok = true;
  if (colon == std::string::npos) {
    ok = num(s, a);
    *b = *a + 1;
  } else {
    if (colon > 0) ok = num(s.substr(0, colon), a);
    if (ok && colon + 1 < s.size()) ok = num(s.substr(colon + 1), b);
  }
  if (!ok) return Status::invalid_argument("--rows: expected A:B (0-based, B exclusive), got '" + s + "'");
  *b = std::min(*b, n);
  *a = std::min(*a, *b);
  return Status::ok();
}

int run_dump(const DumpArgs& args) {
  std::unique_ptr<Store> store;
  Status st = Store::open(args.store, &store);
  if (!st.is_ok()) return fail(st);
  uint64_t a, b;
  st = parse_range(args.rows, store->meta().rows, &a, &b);
  if (!st.is_ok()) return fail(st);
  if (a >= b) return kExOk;
  const int base = 1;  // LIBSVM text is 1-based
  DecodedChunk chunk;
  fmt::memory_buffer out;
  const auto labels = args.mapped ? Store::Labels::kMapped : Store::Labels::kRaw;
  for (size_t k = store->chunk_of_row(a); k < store->chunk_count(); ++k) {
    const ChunkInfo& c = store->chunk(k);
    if (c.first_row >= b) break;
    st = store->read_chunk(k, &chunk, labels);
    if (!st.is_ok()) return fail(st);
    const uint32_t r0 = static_cast<uint32_t>(std::max(a, c.first_row) - c.first_row);
    const uint32_t r1 = static_cast<uint32_t>(std::min<uint64_t>(b, c.first_row + c.row_count) - c.first_row);
    auto offsets = chunk.offsets();
    auto idx = chunk.indices();
    auto val = chunk.values();
    for (uint32_t r = r0; r < r1; ++r) {
      fmt::format_to(std::back_inserter(out), "{}", chunk.labels()[r]);
      for (uint32_t p = offsets[r]; p < offsets[r + 1]; ++p) {
        if (chunk.has_values()) {
          fmt::format_to(std::back_inserter(out), " {}:{}", uint64_t{idx[p]} + base, val[p]);
        } else {
          fmt::format_to(std::back_inserter(out), " {}:1", uint64_t{idx[p]} + base);
        }
      }
      out.push_back('\n');
      if (out.size() > (1 << 20)) {
        if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) {
          return fail(Status::io_error("writing to stdout failed"));
        }
        out.clear();
      }
    }
  }
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    return fail(Status::io_error("writing to stdout failed"));
  }
  return kExOk;
}

}  // namespace

void add_dump(Cli& cli) {
  auto a = std::make_shared<DumpArgs>();
  CLI::App* c = cli.app.add_subcommand("dump", "Print a store's rows as LIBSVM text (1-based indices)");
  c->add_option("store", a->store, "the store")->required();
  c->add_option("--rows", a->rows, "rows A:B (0-based, B exclusive; A:, :B and A also work)");
  c->add_flag("--mapped-labels", a->mapped, "print binary labels as +-1 rather than as written");
  c->callback([&cli, a] { cli.exit_code = run_dump(*a); });
}

}  // namespace agld::cli
