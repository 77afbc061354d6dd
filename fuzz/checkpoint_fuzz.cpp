// Fuzz target: resuming from a checkpoint (`agld sample --resume DIR`): read_checkpoint_info,
// then resume_sample on a small store of the target's own, which checks the run section and
// loads every component's state, then runs the rest of the run. Input: a mode byte, then a
// checkpoint file. mode & 1 == 0: the run section's agld version is first set to this
// build's and the trailer (length, CRC-32C, end marker) to match the bytes, so that the
// seeds (written by another commit) and mutations reach the sections behind those checks;
// (mode >> 1) % 8 picks the method the run resumes with (the seeds' methods, so that a seed
// resumes whole), mode & 0x80 adds the test store. Nothing may crash, hang or read out of bounds; a resumed
// run that succeeds must have its planned draws.
//
// AGLD_FUZZ_MAKE_CORPUS=DIR: writes the seed corpus (checkpoints of each method, with and
// without the test store, at two iterations) to DIR and exits.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "agld/checkpoint.hpp"
#include "agld/sparse.hpp"
#include "agld/version.hpp"
#include "fuzz_support.hpp"
#include "output/checkpoint_io.hpp"
#include "store/crc32c.hpp"

namespace agld {
namespace {

// With the underdamped dynamics' momenta (and hmc2's midpoint snapshots) among them.
constexpr const char* kMethods[] = {"tmu-rr", "ptu-ca", "none-ra", "full-br", "ptu+-ca", "ppu-br", "ptu-ca-hmc2", "tmu-rr-svrhmc"};
constexpr uint32_t kDim = 10;

std::unique_ptr<Store> make_store(const std::string& path, uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  SparseRows rows;
  for (size_t r = 0; r < n; ++r) {
    std::vector<uint32_t> idx = {static_cast<uint32_t>(r % kDim), static_cast<uint32_t>(kDim - 1)};
    if (idx[0] == idx[1]) idx.pop_back();
    std::vector<float> val;
    for (size_t e = 0; e < idx.size(); ++e) val.push_back(static_cast<float>(n01(rng)));
    rows.add_row(n01(rng) > 0 ? 1.0 : -1.0, idx, val);
  }
  StoreMeta meta;
  meta.features = kDim;
  meta.label_kind = LabelKind::kBinary;
  meta.row_sq_norm_sum = 2.0 * static_cast<double>(n);
  meta.row_sq_norm_max = 10;
  std::unique_ptr<StoreWriter> w;
  Status st = StoreWriter::create(path, &w);
  for (size_t r = 0; st.is_ok() && r < n; r += 32) {
    EncodedChunk c;
    st = encode_chunk(rows, r, std::min(n, r + 32), ChunkCodec{}, &c);
    if (st.is_ok()) st = w->add_chunk(c);
  }
  if (st.is_ok()) st = w->finish(meta);
  AGLD_FUZZ_CHECK(st.is_ok(), st.message());
  std::unique_ptr<Store> s;
  st = Store::open(path, &s);
  AGLD_FUZZ_CHECK(st.is_ok(), st.message());
  return s;
}

struct Setup {
  std::unique_ptr<Store> train = make_store((fuzz::scratch_dir() / "train.agld").string(), 1, 150);
  std::unique_ptr<Store> test = make_store((fuzz::scratch_dir() / "test.agld").string(), 2, 40);
};
Setup& setup() {
  static Setup s;
  return s;
}

SampleOptions options(const char* method) {
  SampleOptions o;
  o.method = method;
  o.chains = 2;
  o.threads = 1;
  o.batch = 20;
  o.iterations = 60;
  o.burn_in = 20;
  o.thin = 2;
  o.evaluations = 5;
  o.precondition = "none";
  o.memory = uint64_t{256} << 20;
  o.track_default = false;
  o.track = {0, 3};
  return o;
}

// Keeps the checkpoints of a run (every point offered) when asked.
class Observer final : public SampleObserver {
 public:
  explicit Observer(bool keep) : keep_(keep) {}
  bool checkpoint_due(uint64_t, bool) override { return keep_; }
  Status on_checkpoint(uint64_t, const std::function<Status(WritableFile&)>& save) override {
    fuzz::MemoryFileSystem fs;
    std::unique_ptr<WritableFile> f;
    AGLD_RETURN_IF_ERROR(fs.create_atomic("c", &f));
    AGLD_RETURN_IF_ERROR(save(*f));
    AGLD_RETURN_IF_ERROR(f->commit());
    const fuzz::Bytes* b = fs.get("c");
    saved.emplace_back(reinterpret_cast<const char*>(b->span().data()), b->size());
    return Status::ok();
  }
  std::vector<std::string> saved;

 private:
  bool keep_;
};

// The RUN section's agld version set to this build's (the seeds were written by another
// commit, which resume refuses before it reads further): when the bytes hold a RUN section
// whose version length is sane.
void set_version(std::vector<std::byte>& f) {
  using checkpoint::kHeaderSize;
  const size_t at = kHeaderSize + 4;
  uint64_t n = 0;
  if (f.size() < at + 8) return;
  std::memcpy(&n, f.data() + at, 8);
  if (n > 256 || f.size() < at + 8 + n) return;
  const std::string v = kVersion;
  const uint64_t m = v.size();
  std::vector<std::byte> out(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(at));
  out.resize(at + 8 + m);
  std::memcpy(out.data() + at, &m, 8);
  std::memcpy(out.data() + at + 8, v.data(), m);
  out.insert(out.end(), f.begin() + static_cast<std::ptrdiff_t>(at + 8 + n), f.end());
  f = std::move(out);
}

void fix_trailer(std::vector<std::byte>& f) {
  using checkpoint::kHeaderSize;
  using checkpoint::kTrailerSize;
  if (f.size() < kHeaderSize + kTrailerSize) return;
  std::byte* t = f.data() + f.size() - kTrailerSize;
  const uint64_t payload = f.size() - kHeaderSize - kTrailerSize;
  const uint32_t crc = crc32c::value(f.data(), f.size() - kTrailerSize), zero = 0;
  std::memcpy(t, &payload, 8);
  std::memcpy(t + 8, &crc, 4);
  std::memcpy(t + 12, &zero, 4);
  std::memcpy(t + 16, "AGLDCKND", 8);
}

void make_corpus(const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (size_t m = 0; m < std::size(kMethods); ++m) {
    for (bool with_test : {false, true}) {
      Observer obs(true);
      SampleResult r;
      Status st = sample(*setup().train, with_test ? setup().test.get() : nullptr, options(kMethods[m]), obs, &r);
      AGLD_FUZZ_CHECK(st.is_ok(), st.message());
      for (size_t i : {obs.saved.size() / 4, obs.saved.size() - 1}) {
        const uint8_t mode = static_cast<uint8_t>((m << 1) | (with_test ? 0x80 : 0));
        std::ofstream out(dir + "/" + kMethods[m] + (with_test ? "_test_" : "_") + std::to_string(i), std::ios::binary);
        out.put(static_cast<char>(mode));
        out << obs.saved[i];
      }
    }
  }
}

}  // namespace
}  // namespace agld

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("AGLD_FUZZ_MAKE_CORPUS")) {
    agld::make_corpus(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agld;
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::vector<std::byte> bytes(size - 1);
  if (size > 1) std::memcpy(bytes.data(), data + 1, size - 1);
  if ((mode & 1) == 0) {
    set_version(bytes);
    fix_trailer(bytes);
  }
  fuzz::MemoryFileSystem fs;
  fs.put("run/checkpoint", ByteSpan(bytes.data(), bytes.size()));
  std::unique_ptr<ReadableFile> file;
  Status st = fs.open_readable("run/checkpoint", &file);
  AGLD_FUZZ_CHECK(st.is_ok(), st.message());
  CheckpointInfo info;
  (void)read_checkpoint_info(*file, &info);
  const SampleOptions o = options(kMethods[(mode >> 1) % std::size(kMethods)]);
  Observer obs(false);
  SampleResult r;
  st = resume_sample(*setup().train, (mode & 0x80) ? setup().test.get() : nullptr, o, *file, obs, &r);
  if (st.is_ok()) AGLD_FUZZ_CHECK(r.draws == (o.iterations.value() - o.burn_in.value()) / o.thin.value(), "draws");
  return 0;
}
