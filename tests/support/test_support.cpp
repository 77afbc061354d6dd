#include "test_support.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

namespace agld::test {

namespace fs = std::filesystem;

TempDir::TempDir() {
  const char* root = std::getenv("AGLD_TEST_TMP");
  fs::path base = root ? fs::path(root) : fs::temp_directory_path();
  fs::create_directories(base);
  std::string tmpl = (base / "agld-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

RunResult run_shell(const std::string& command) {
  TempDir tmp;
  std::string out = tmp.file("stdout"), err = tmp.file("stderr");
  std::string full = "( " + command + " ) >'" + out + "' 2>'" + err + "'";
  int rc = std::system(full.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

RunResult run_agld(const std::string& args, const std::string& stdin_file) {
  std::string in = stdin_file.empty() ? "/dev/null" : stdin_file;
  return run_shell(std::string("'") + AGLD_BINARY + "' " + args + " <'" + in + "'");
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream f(path, std::ios::binary);
  f << contents;
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

uint64_t test_seed(uint64_t default_seed) {
  uint64_t seed = default_seed;
  if (const char* s = std::getenv("AGLD_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::cout << "[ seed     ] AGLD_TEST_SEED=" << seed << std::endl;
  return seed;
}

SparseRows random_matrix(const RandomMatrixSpec& spec, std::mt19937_64& rng) {
  SparseRows m;
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<float> gauss(0, 2);
  std::vector<uint32_t> idx;
  std::vector<float> val;
  for (size_t r = 0; r < spec.rows; ++r) {
    size_t k;
    if (u(rng) < spec.empty_row_prob) {
      k = 0;
    } else if (u(rng) < spec.long_row_prob) {
      k = std::min<size_t>(spec.features, 1000 + rng() % 3000);
    } else {
      k = std::min<size_t>(spec.features, 1 + rng() % std::max<size_t>(1, spec.max_row_nnz));
    }
    std::set<uint32_t> chosen;
    while (chosen.size() < k) chosen.insert(static_cast<uint32_t>(rng() % spec.features));
    idx.assign(chosen.begin(), chosen.end());
    val.clear();
    for (size_t j = 0; j < k; ++j) {
      float v = spec.binary_values ? 1.0f : gauss(rng);
      if (!spec.binary_values && u(rng) < 0.2) v = 1.0f;
      val.push_back(v);
    }
    double label = spec.binary_labels ? (u(rng) < 0.3 ? 1.0 : -1.0) : std::normal_distribution<>(0, 3)(rng);
    m.add_row(label, idx, val);
  }
  return m;
}

namespace {
// A writer at path holding rows in chunks of chunk_rows, not yet finished.
Status write_chunks(const std::string& path, const SparseRows& rows, size_t chunk_rows, const ChunkCodec& codec,
                    std::unique_ptr<StoreWriter>* out) {
  std::unique_ptr<StoreWriter> w;
  AGLD_RETURN_IF_ERROR(StoreWriter::create(path, &w));
  for (size_t r = 0; r < rows.rows(); r += chunk_rows) {
    EncodedChunk c;
    AGLD_RETURN_IF_ERROR(encode_chunk(rows, r, std::min(rows.rows(), r + chunk_rows), codec, &c));
    AGLD_RETURN_IF_ERROR(w->add_chunk(c));
  }
  *out = std::move(w);
  return Status::ok();
}
}  // namespace

Status write_store(const std::string& path, const SparseRows& rows, size_t chunk_rows,
                   const ChunkCodec& codec, const StoreMeta& meta) {
  std::unique_ptr<StoreWriter> w;
  AGLD_RETURN_IF_ERROR(write_chunks(path, rows, chunk_rows, codec, &w));
  return w->finish(meta);
}

Status write_store(const std::string& path, const SparseRows& rows, size_t chunk_rows,
                   const ChunkCodec& codec, uint64_t features) {
  StoreMeta m;
  m.features = features;
  m.label_kind = LabelKind::kReal;
  return write_store(path, rows, chunk_rows, codec, m);
}

BruteFeatureStats brute_feature_stats(const SparseRows& rows, uint64_t features) {
  BruteFeatureStats b;
  b.count.assign(features, 0);
  b.sum_sq.assign(features, 0.0);
  b.max_abs.assign(features, 0.0f);
  for (size_t r = 0; r < rows.rows(); ++r) {
    auto idx = rows.row_indices(r);
    auto val = rows.row_values(r);
    for (size_t p = 0; p < idx.size(); ++p) {
      const uint32_t j = idx[p];
      b.count[j] += 1;
      b.sum_sq[j] += static_cast<double>(val[p]) * static_cast<double>(val[p]);
      b.max_abs[j] = std::max(b.max_abs[j], std::abs(val[p]));
    }
  }
  return b;
}

float awkward_value(double c, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  return c < 0.1   ? 0.0f
         : c < 0.4 ? 1.0f
         : c < 0.6 ? static_cast<float>(-3 * u(rng))
         : c < 0.7 ? static_cast<float>(1e-20 * u(rng))
         : c < 0.8 ? static_cast<float>(1e15 * u(rng))
                   : static_cast<float>(std::log1p(100 * u(rng)));
}

Status write_store_with_stats(const std::string& path, const SparseRows& rows, size_t chunk_rows,
                              const ChunkCodec& codec, const StoreMeta& meta,
                              uint32_t block_features) {
  auto stats = std::make_shared<BruteFeatureStats>(brute_feature_stats(rows, meta.features));
  std::unique_ptr<StoreWriter> w;
  AGLD_RETURN_IF_ERROR(write_chunks(path, rows, chunk_rows, codec, &w));
  w->record_feature_stats(
      [stats](uint64_t first, uint64_t n, uint64_t* count, double* sum_sq, float* max_abs) {
        std::copy_n(stats->count.begin() + static_cast<std::ptrdiff_t>(first), n, count);
        std::copy_n(stats->sum_sq.begin() + static_cast<std::ptrdiff_t>(first), n, sum_sq);
        std::copy_n(stats->max_abs.begin() + static_cast<std::ptrdiff_t>(first), n, max_abs);
      },
      block_features);
  return w->finish(meta);
}

std::string to_libsvm(const SparseRows& rows) {
  std::string s;
  for (size_t r = 0; r < rows.rows(); ++r) {
    s += fmt::format("{}", rows.labels[r]);
    auto idx = rows.row_indices(r);
    auto val = rows.row_values(r);
    for (size_t j = 0; j < idx.size(); ++j) s += fmt::format(" {}:{}", idx[j] + 1, val[j]);
    s += '\n';
  }
  return s;
}

Residency::Residency(const std::string& path) : map_(MAP_FAILED) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return;
  size_ = static_cast<uint64_t>(::lseek(fd_, 0, SEEK_END));
  if (size_ > 0) map_ = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  vec_.resize((size_ + page - 1) / page);
}

Residency::~Residency() {
  if (map_ != MAP_FAILED) ::munmap(map_, size_);
  if (fd_ >= 0) ::close(fd_);
}

bool Residency::ok() const { return fd_ >= 0 && (size_ == 0 || map_ != MAP_FAILED); }

uint64_t Residency::bytes() {
  if (size_ == 0) return 0;
  if (::mincore(map_, size_, vec_.data()) != 0) return size_;
  uint64_t n = 0;
  for (unsigned char v : vec_) n += v & 1;
  return n * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace agld::test
