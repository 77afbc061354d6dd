// The agld command line, end to end: exit codes (sysexits), one-line errors, and the
// convert -> info -> dump round trip on the shipped dataset.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "agld/reader.hpp"
#include "agld/sample.hpp"
#include "agld/version.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::run_agld;
using test::TempDir;

using test::shell_arg;
const std::string kHeart = test::heart_scale_svm();

// Parses LIBSVM lines into (label, sorted (index, value)) for comparison up to formatting.
std::vector<std::pair<double, std::vector<std::pair<long, float>>>> parse_text(const std::string& text) {
  std::vector<std::pair<double, std::vector<std::pair<long, float>>>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tok;
    ls >> tok;
    std::pair<double, std::vector<std::pair<long, float>>> row{std::stod(tok), {}};
    while (ls >> tok) {
      size_t c = tok.find(':');
      row.second.emplace_back(std::stol(tok.substr(0, c)), std::stof(tok.substr(c + 1)));
    }
    std::sort(row.second.begin(), row.second.end());
    rows.push_back(row);
  }
  return rows;
}

void expect_one_line_error(const test::RunResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("agld: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(Cli, HeartScaleConvertsAndDumpsBackIdentically) {
  TempDir dir;
  const std::string store = dir.file("heart.agld");
  auto r = run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(store) + " --keep-order");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("270 rows"), std::string::npos) << r.err;
  r = run_agld("dump " + shell_arg(store));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_text(r.out), parse_text(test::read_file(kHeart)));
  // Every value in heart_scale has at most 6 significant digits, so the text is identical
  // up to the trailing space the original has and "+1" written as "1".
  std::string orig = test::read_file(kHeart), norm;
  std::istringstream in(orig);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (line.rfind("+1", 0) == 0) line = line.substr(1);
    norm += line + "\n";
  }
  EXPECT_EQ(r.out, norm);
  r = run_agld("dump " + shell_arg(store) + " --rows 268:");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
  r = run_agld("dump " + shell_arg(store) + " --rows 5");
  EXPECT_EQ(parse_text(r.out)[0], parse_text(orig)[5]);
  r = run_agld("dump " + shell_arg(store) + " --rows x:y");
  expect_one_line_error(r, 64, "--rows");
}

// By default the rows are shuffled (seeded); --keep-order keeps them as they were; --shuffle,
// the old way to ask for it, is the default; info says which order a store has.
TEST(Cli, ConvertShufflesByDefaultAndInfoSaysSo) {
  TempDir dir;
  const std::string shuffled = dir.file("s.agld"), kept = dir.file("k.agld");
  auto r = run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(shuffled));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("270 rows shuffled (seed 0)"), std::string::npos) << r.err;
  const auto orig = parse_text(test::read_file(kHeart));
  auto rows = parse_text(run_agld("dump " + shell_arg(shuffled)).out);
  EXPECT_NE(rows, orig) << "the rows kept their order";
  auto sorted_orig = orig;
  std::sort(sorted_orig.begin(), sorted_orig.end());
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(rows, sorted_orig) << "not the same rows";
  r = run_agld("info " + shell_arg(shuffled));
  EXPECT_NE(r.out.find("\norder        random (shuffled at conversion, seed 0)\n"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(run_agld("info " + shell_arg(shuffled) + " --json").out);
  EXPECT_EQ(j["order"], "shuffled");
  EXPECT_EQ(j["order_seed"], 0);
  EXPECT_EQ(j["options"]["shuffle"], true);

  // --shuffle is the default: the same store, byte for byte.
  ASSERT_EQ(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(dir.file("s2.agld")) + " -q --shuffle")
                .exit_code,
            0);
  EXPECT_TRUE(test::read_file(dir.file("s2.agld")) == test::read_file(shuffled));
  // Another seed, another order, recorded.
  r = run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(dir.file("s5.agld")) + " --seed 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["order"], "shuffled");
  EXPECT_EQ(nlohmann::json::parse(r.out)["seed"], 5);
  EXPECT_NE(run_agld("dump " + shell_arg(dir.file("s5.agld"))).out, run_agld("dump " + shell_arg(shuffled)).out);
  j = nlohmann::json::parse(run_agld("info " + shell_arg(dir.file("s5.agld")) + " --json").out);
  EXPECT_EQ(j["order_seed"], 5);
  EXPECT_NE(run_agld("info " + shell_arg(dir.file("s5.agld"))).out.find("shuffled at conversion, seed 5"),
            std::string::npos);

  r = run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(kept) + " --keep-order --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["order"], "kept");
  EXPECT_EQ(parse_text(run_agld("dump " + shell_arg(kept)).out), orig);
  r = run_agld("info " + shell_arg(kept));
  EXPECT_NE(r.out.find("\norder        as in the source (converted with --keep-order"), std::string::npos) << r.out;
  j = nlohmann::json::parse(run_agld("info " + shell_arg(kept) + " --json").out);
  EXPECT_EQ(j["order"], "kept");
  EXPECT_TRUE(j["order_seed"].is_null());

  // A store written before shuffling was the default: StoreWriter with the options' defaults.
  std::mt19937_64 rng(2);
  test::RandomMatrixSpec spec;
  spec.rows = 40;
  const std::string old = dir.file("old.agld");
  ASSERT_TRUE(test::write_store(old, test::random_matrix(spec, rng), 16, ChunkCodec{}, uint64_t{1000}).is_ok());
  r = run_agld("info " + shell_arg(old));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("or written before agld shuffled by default)"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(run_agld("info " + shell_arg(old) + " --json").out)["order"], "kept");
}

TEST(Cli, ConvertOrderUsageErrors) {
  TempDir dir;
  const std::string out = dir.file("x.agld");
  expect_one_line_error(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(out) + " --shuffle --keep-order"),
                        64, "--shuffle and --keep-order");
  expect_one_line_error(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(out) + " --memory 32M"), 64,
                        "--memory must be at least 64M to shuffle the rows (or --keep-order");
  expect_one_line_error(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(out) + " --temp-dir " +
                                 shell_arg(dir.file("none"))),
                        64, "--temp-dir");
  EXPECT_TRUE(test::list_dir(dir.path()).empty());
  // Keeping the order needs no memory of its own.
  EXPECT_EQ(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(out) + " -q --keep-order --memory 32M")
                .exit_code,
            0);
  auto help = run_agld("convert --help");
  EXPECT_NE(help.out.find("--keep-order"), std::string::npos);
  EXPECT_NE(help.out.find("the default, accepted for old scripts"), std::string::npos) << help.out;
}

// The help of the options that name a unit lists what the registries hold, so that a new
// model, order or dynamics is documented on the command line without editing a help text.
TEST(Cli, HelpListsEveryRegisteredUnit) {
  const std::string sample = run_agld("sample --help").out;
  const std::string optimize = run_agld("optimize --help").out;
  for (const std::string& m : sample_models()) {
    EXPECT_NE(sample.find(m), std::string::npos) << m;
    EXPECT_NE(optimize.find(m), std::string::npos) << m;
  }
  for (const MethodInfo& m : sample_methods()) {
    EXPECT_TRUE(sample.find("|" + m.dynamics) != std::string::npos ||
                sample.find("dynamics " + m.dynamics) != std::string::npos)
        << m.dynamics;
    if (!m.means.empty()) {
      EXPECT_NE(sample.find(m.name + " = " + m.means), std::string::npos) << m.name;
    }
  }
  for (const ReaderOrderInfo& o : reader_orders()) EXPECT_NE(optimize.find(o.name), std::string::npos) << o.name;
}

TEST(Cli, InfoJsonHasTheDocumentedKeys) {
  TempDir dir;
  const std::string store = dir.file("heart.agld");
  ASSERT_EQ(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(store) + " --quiet").exit_code, 0);
  auto r = run_agld("info " + shell_arg(store) + " --json --verify");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rows"], 270);
  EXPECT_EQ(j["features"], 13);
  EXPECT_EQ(j["nnz"], 3378);
  EXPECT_EQ(j["chunks"], 1);
  EXPECT_EQ(j["label_kind"], "binary");
  EXPECT_EQ(j["verify"]["ok"], true);
  EXPECT_GT(j["compression_ratio"].get<double>(), 1.0);
  EXPECT_EQ(j["sources"][0]["stale"], false);
  EXPECT_EQ(j["sources"][0]["size"], 27670);
  for (const char* key : {"row_sq_norm_max", "row_sq_norm_sum", "label_counts", "file_bytes", "options", "order",
                          "order_seed"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  r = run_agld("info " + shell_arg(store));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("rows         270"), std::string::npos) << r.out;
}

TEST(Cli, StaleSourceIsRecognised) {
  TempDir dir;
  const std::string src = dir.file("s.svm"), store = dir.file("s.agld");
  test::write_file(src, "1 1:1\n-1 2:1\n");
  ASSERT_EQ(run_agld("convert " + shell_arg(src) + " -o " + shell_arg(store) + " -q").exit_code, 0);
  test::write_file(src, "1 1:1\n-1 2:1\n1 3:1\n");
  auto r = run_agld("info " + shell_arg(store) + " --json");
  EXPECT_EQ(nlohmann::json::parse(r.out)["sources"][0]["stale"], true);
  r = run_agld("info " + shell_arg(store));
  EXPECT_NE(r.out.find("STALE"), std::string::npos);
}

TEST(Cli, StdinAndCompressedStdin) {
  TempDir dir;
  const std::string gz = dir.file("h.gz");
  ASSERT_EQ(test::run_shell("gzip -c " + shell_arg(kHeart) + " > " + shell_arg(gz)).exit_code, 0);
  // From stdin, shuffled by default as from a file: the same rows in the same order.
  ASSERT_EQ(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(dir.file("f.agld")) + " -q").exit_code, 0);
  const std::string from_file = run_agld("dump " + shell_arg(dir.file("f.agld"))).out;
  for (const std::string& in : {kHeart, gz}) {
    auto r = run_agld("convert - -o " + shell_arg(dir.file("x.agld")) + " --json", in);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["rows"], 270);
    r = run_agld("info " + shell_arg(dir.file("x.agld")) + " --json");
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["sources"][0]["name"], "-");
    EXPECT_TRUE(j["sources"][0]["size"].is_null());
    EXPECT_EQ(j["order"], "shuffled");
    EXPECT_EQ(run_agld("dump " + shell_arg(dir.file("x.agld"))).out, from_file);
  }
  EXPECT_EQ(test::list_dir(dir.path()), (std::vector<std::string>{"f.agld", "h.gz", "x.agld"}));
}

TEST(Cli, ExitCodesAndOneLineErrors) {
  TempDir dir;
  expect_one_line_error(run_agld("convert"), 64, "");
  expect_one_line_error(run_agld("convert " + shell_arg(kHeart) + " -o x --compression lz4"), 64, "--compression");
  expect_one_line_error(run_agld("convert " + shell_arg(kHeart) + " -o x --chunk-bytes 12Q"), 64, "size");
  expect_one_line_error(run_agld("convert " + shell_arg(kHeart) + " -o x --test-fraction 0.2"), 64, "--test-output");
  expect_one_line_error(run_agld("convert " + shell_arg(kHeart) + " -o x --compression none --huffman-literals"), 64,
                        "--huffman-literals");
  expect_one_line_error(run_agld("frobnicate"), 64, "");
  expect_one_line_error(run_agld("convert " + shell_arg(dir.file("missing.svm")) + " -o " + shell_arg(dir.file("o.agld"))), 66,
                        "missing.svm: no such file");
  test::write_file(dir.file("bad.svm"), "1 1:1\n1 2:1 2:3\n");
  const std::string out = dir.file("bad.agld");
  expect_one_line_error(run_agld("convert " + shell_arg(dir.file("bad.svm")) + " -o " + shell_arg(out)), 65,
                        "bad.svm:2:7: duplicate feature index 2");
  EXPECT_FALSE(std::filesystem::exists(out));
  // A failed conversion leaves a previous good store untouched.
  ASSERT_EQ(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(out) + " -q").exit_code, 0);
  const std::string good = test::read_file(out);
  EXPECT_EQ(run_agld("convert " + shell_arg(dir.file("bad.svm")) + " -o " + shell_arg(out)).exit_code, 65);
  EXPECT_EQ(test::read_file(out), good);
  EXPECT_EQ(test::list_dir(dir.path()), (std::vector<std::string>{"bad.agld", "bad.svm"}));
  expect_one_line_error(run_agld("info " + shell_arg(dir.file("bad.svm"))), 65, "not an agld store");
  expect_one_line_error(run_agld("info " + shell_arg(dir.file("nope.agld"))), 66, "no such file");
  expect_one_line_error(run_agld("convert " + shell_arg(out) + " -o " + shell_arg(out)), 64, "overwrite an input");
  EXPECT_EQ(run_agld("--help").exit_code, 0);
  EXPECT_EQ(run_agld("--version").out, std::string("agld ") + kVersion + "\n");  // version+commit
}

// Raw literals (the default) are recorded in the store's options and shown by info;
// --huffman-literals turns them off; the rows are the same.
TEST(Cli, RawLiteralsStoreReadsTheSame) {
  TempDir dir;
  const std::string plain = dir.file("plain.agld"), raw = dir.file("raw.agld");
  ASSERT_EQ(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(plain) + " -q --huffman-literals").exit_code, 0);
  ASSERT_EQ(run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(raw) + " -q").exit_code, 0);
  auto info = run_agld("info " + shell_arg(raw) + " --json --verify");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  auto j = nlohmann::json::parse(info.out);
  EXPECT_TRUE(j["options"]["raw_literals"].get<bool>());
  EXPECT_TRUE(j["verify"]["ok"].get<bool>());
  EXPECT_FALSE(nlohmann::json::parse(run_agld("info " + shell_arg(plain) + " --json").out)["options"]["raw_literals"].get<bool>());
  EXPECT_NE(run_agld("info " + shell_arg(raw)).out.find("raw literals"), std::string::npos);
  EXPECT_EQ(run_agld("dump " + shell_arg(raw)).out, run_agld("dump " + shell_arg(plain)).out);
}

// Criteo-shaped values (log-counts: few distinct) are stored as codes into value tables with
// zstd, which info counts; never with codec none; the rows are the same.
TEST(Cli, InfoCountsValueTablesAndDecodedBytes) {
  TempDir dir;
  const std::string text = dir.file("c.svm"), z = dir.file("z.agld"), n = dir.file("n.agld");
  ASSERT_EQ(run_agld("gen --shape criteo --rows 3000 --seed 3 -o " + shell_arg(text) + " --quiet").exit_code, 0);
  ASSERT_EQ(run_agld("convert " + shell_arg(text) + " -o " + shell_arg(z) + " -q").exit_code, 0);
  ASSERT_EQ(run_agld("convert " + shell_arg(text) + " -o " + shell_arg(n) + " -q --compression none").exit_code, 0);
  auto jz = nlohmann::json::parse(run_agld("info " + shell_arg(z) + " --json --verify").out);
  auto jn = nlohmann::json::parse(run_agld("info " + shell_arg(n) + " --json").out);
  EXPECT_EQ(jz["value_table_chunks"].get<uint64_t>(), jz["chunks"].get<uint64_t>());
  EXPECT_TRUE(jz["verify"]["ok"].get<bool>());
  EXPECT_EQ(jn["value_table_chunks"].get<uint64_t>(), 0u);
  EXPECT_NE(run_agld("info " + shell_arg(z)).out.find("value tables in"), std::string::npos);
  EXPECT_EQ(run_agld("info " + shell_arg(n)).out.find("value tables"), std::string::npos);
  EXPECT_EQ(run_agld("dump " + shell_arg(z)).out, run_agld("dump " + shell_arg(n)).out);
  // Decoded, both take the same memory: per row a label and an offset, per nonzero an index
  // and a value (criteo's are not all 1), and up to 100 bytes a chunk of alignment.
  const uint64_t rows = jz["rows"].get<uint64_t>(), nnz = jz["nnz"].get<uint64_t>();
  const uint64_t decoded = jz["decoded_bytes"].get<uint64_t>();
  EXPECT_EQ(jn["decoded_bytes"].get<uint64_t>(), decoded);
  EXPECT_GE(decoded, 12 * rows + 8 * nnz);
  EXPECT_LE(decoded, 12 * rows + 8 * nnz + 100 * jz["chunks"].get<uint64_t>());
  EXPECT_LT(jz["raw_bytes"].get<uint64_t>(), decoded);  // packed planes and rows
}

TEST(Cli, SkipBadLinesReportsThem) {
  TempDir dir;
  test::write_file(dir.file("s.svm"), "1 1:1\n1 2:x\n-1 3:1\n");
  auto r = run_agld("convert " + shell_arg(dir.file("s.svm")) + " -o " + shell_arg(dir.file("s.agld")) + " --skip-bad-lines --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["skipped_lines"], 1);
  EXPECT_NE(r.err.find("skipped 1 bad line"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("s.svm:2:5"), std::string::npos) << r.err;
}

}  // namespace cli_test
}  // namespace
}  // namespace agld
