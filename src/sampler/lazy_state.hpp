// The lazy per-coordinate state of one chain (ALGORITHMS.md section 4): the positions x and,
// per coordinate, the iteration it was last brought to (and the momenta and the aggregate's
// entries, which its jumps read: a coordinate's numbers, and its stamp when the budget holds
// it, in one record). Between two touches of
// coordinate j the dynamics is a linear Gaussian recursion with constant coefficients (A_j changes only
// when a row with j is in the batch, or at a refresh), so the steps j skipped are applied in
// one exact jump when j is next read (bring). Internal to the sampler layer.
//
// The dynamics (sampler/dynamics.hpp) is data: a coordinate's state is its position x_j and,
// for the underdamped kinds, its momentum p_j (in phi units); one step and the k-step jumps
// come from the dynamics' GaussianJumps, the same code for every dynamics. hmc2 evaluates
// the gradient at z = x + c p (eval()).
//
// Per-coordinate steps (a diagonal preconditioner, sampler/preconditioner.hpp) come as
// levels: coordinate j steps with levels[level(j)], one of at most 128 dynamics whose steps
// differ by a constant factor. Each level keeps its own table and memo of jumps, so a catch-up
// of every coordinate still computes each long jump once a level, not d times.
//
// A stamp holds the coordinate's level (7 bits) and a 24-bit offset from the last moment
// every coordinate was current (sync); a full catch-up is due before the offset could
// overflow (gap_due). While iteration k runs, the coordinates of its batch's support carry a
// flag and their slot in the support instead (their levels kept beside the support): the
// support's gradient is gathered by slot, not in a d-long scratch array.
#pragma once

#include <algorithm>
#include <bit>
#include <boost/random/mersenne_twister.hpp>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <cstdint>
#include <span>
#include <sstream>
#include <vector>

#include "common/huge_array.hpp"
#include "common/strided_span.hpp"
#include "common/state_archive.hpp"
#include "sampler/dynamics.hpp"

namespace agld::sampler {

// A chain's Gaussian noise: its own engine, so that chains never share a stream. Off (a
// temperature of 0: the dynamics is gradient descent), it is 0 and draws nothing. The engine
// is Boost's mt19937_64: the same sequence as the standard library's, drawn 1.4 to 1.7 times
// faster with the normals (libstdc++'s regeneration of the state is slower); a chain draws two
// normals a coordinate at each catch-up of all d.
class Noise {
 public:
  explicit Noise(uint64_t seed, bool on = true) : engine_(seed), on_(on) {}
  double operator()() { return on_ ? normal_(engine_) : 0.0; }
  boost::random::mt19937_64& engine() { return engine_; }

  // The engine's state (the normal distribution keeps none: Boost's ziggurat), as Boost
  // prints it (a checkpoint is read only by the build that wrote it).
  void save(StateWriter& out) const {
    std::ostringstream s;
    s << engine_;
    out.text("a chain's noise state", s.str());
  }
  Status load(StateReader& in) {
    std::string text;
    AGLD_RETURN_IF_ERROR(in.text("a chain's noise state", &text, 1 << 16));
    // Boost skips the whitespace after each word, and skipping at the end of the text fails:
    // a space after the last word keeps that failure for a truncated state alone.
    std::istringstream s(text + ' ');
    boost::random::mt19937_64 e;
    if (!(s >> e)) return in.corrupt("a chain's noise state does not parse");
    engine_ = e;
    return Status::ok();
  }

 private:
  boost::random::mt19937_64 engine_;
  boost::random::normal_distribution<double> normal_;
  bool on_;
};

class LazyState {
 public:
  static constexpr uint32_t kInSupport = 0x80000000u;  // flag: the low bits are the slot
  static constexpr uint32_t kLevelShift = 24;
  static constexpr uint32_t kLevelMask = 0x7F000000u;
  static constexpr uint32_t kOffsetMask = 0x00FFFFFFu;
  static constexpr uint64_t kMaxGap = 0x00FFFFF0u;
  static constexpr size_t kMaxLevels = 128;

  // d coordinates at zero (momenta too), each with dynamics levels[level[j]] (level null: every
  // coordinate at level 0); with `aggregate`, each also keeps its entry of the snapshot
  // strategy's aggregate A (zero). The levels' jump memos are the chain's own: not shared.
  // stamps_in_record: the layout (at width(), below).
  LazyState(uint64_t d, std::vector<CoordinateDynamics> levels, double inv_prior_var, const uint8_t* level = nullptr,
            bool aggregate = false, bool stamps_in_record = true)
      : dyn_(std::move(levels)), inv_prior_var_(inv_prior_var), d_(d) {
    two_ = dyn_.front().jumps.dim() == 2;
    agg_ = aggregate;
    w_ = width(two_ ? 2 : 1, agg_, stamps_in_record);
    rec_.reset(d * w_);  // zero: every stamp at level 0, offset 0
    if (stamps_in_record) {
      // The stamp slot's first 4 bytes. Those bytes are only ever read and written as a stamp,
      // the slot's others never.
      stamps_ = StridedSpan<uint32_t>(reinterpret_cast<uint32_t*>(rec_.data() + (w_ - 1)), d, 2 * w_);
    } else {
      own_stamps_.reset(d);
      stamps_ = own_stamps_;
    }
    for (const CoordinateDynamics& l : dyn_) midpoint_ |= l.eval_shift != 0;
    scale_.assign(dyn_.size(), 1.0);
    if (level) {
      for (uint64_t j = 0; j < d; ++j) set_stamp(j, static_cast<uint32_t>(level[j]) << kLevelShift);
    }
  }

  // Bytes a coordinate costs with a state of state_dim numbers (and an aggregate entry), its
  // stamp in its record or in an array of its own.
  static constexpr uint64_t bytes_per_coordinate(int state_dim, bool aggregate, bool stamps_in_record) {
    return sizeof(double) * width(state_dim, aggregate, stamps_in_record) + (stamps_in_record ? 0 : sizeof(uint32_t));
  }

  uint64_t dim() const { return d_; }
  bool has_momentum() const { return two_; }
  bool has_aggregate() const { return agg_; }
  bool midpoint() const { return midpoint_; }
  // The levels: their count, one step's coefficients, whether a level never moves on its own
  // (the dense block's), and the scale of its noise (1: the dynamics'; sampler/gradient_noise.hpp).
  // A new scale applies to every jump from then on, so it may change only where every
  // coordinate of the level is current.
  size_t levels() const { return dyn_.size(); }
  GaussianJumps::Coef level_step(uint32_t l) const { return dyn_[l].jumps.jump(1); }
  bool level_still(uint32_t l) const { return dyn_[l].still; }
  double noise_scale(uint32_t l) const { return scale_[l]; }
  void set_noise_scale(uint32_t l, double s) { scale_[l] = s; }
  // The prior's precision (the same at every level).
  double inv_prior_var() const { return inv_prior_var_; }
  // The positions, the momenta (empty for ld) and the aggregate (empty without one), as
  // views into the records.
  StridedSpan<double> x() { return {rec_.data(), d_, w_}; }
  StridedSpan<const double> x() const { return {rec_.data(), d_, w_}; }
  double x(uint32_t j) const { return rec(j)[0]; }
  StridedSpan<double> p() { return two_ ? StridedSpan<double>(rec_.data() + 1, d_, w_) : StridedSpan<double>(); }
  StridedSpan<const double> p() const {
    return two_ ? StridedSpan<const double>(rec_.data() + 1, d_, w_) : StridedSpan<const double>();
  }
  StridedSpan<double> a() { return agg_ ? StridedSpan<double>(rec_.data() + 1 + two_, d_, w_) : StridedSpan<double>(); }
  StridedSpan<const double> a() const {
    return agg_ ? StridedSpan<const double>(rec_.data() + 1 + two_, d_, w_) : StridedSpan<const double>();
  }
  // Coordinate j's aggregate entry (0 without an aggregate).
  double a(uint32_t j) const { return agg_ ? rec(j)[1 + two_] : 0.0; }
  // Where coordinate j's gradient is evaluated (in the support or not): x_j, or hmc2's
  // midpoint x_j + c p_j.
  double eval(uint32_t j) const {
    const double* r = rec(j);
    if (!midpoint_) return r[0];
    return r[0] + dyn_[level(j)].eval_shift * r[1];
  }

  // Every coordinate's gradient point into out (d long; the support empty).
  void eval_all(std::span<double> out) const {
    for (uint64_t j = 0; j < d_; ++j) {
      const double* r = rec(static_cast<uint32_t>(j));
      out[j] = midpoint_ ? r[0] + dyn_[level_of(stamp(j))].eval_shift * r[1] : r[0];
    }
  }

  // Brings j (not in the support) to time k: the steps it skipped, in one exact jump with its
  // aggregate entry.
  void bring(uint32_t j, uint64_t k, Noise& noise) {
    const uint32_t now = offset(k);
    const uint32_t st = stamp(j);
    const uint32_t gap = now - (st & kOffsetMask);
    if (gap) advance(j, level_of(st), a(j), gap, noise);
    set_stamp(j, (st & kLevelMask) | now);
  }

  // The support of iteration k. enter() brings j to k and gives it the next slot; slot()
  // is then its place; leave_support() steps nothing but stamps the support k + 1 (after
  // the caller has stepped it) or k (not stepped).
  bool in_support(uint32_t j) const { return (stamp(j) & kInSupport) != 0; }
  uint32_t slot(uint32_t j) const { return stamp(j) & ~kInSupport; }
  void enter(uint32_t j, uint64_t k, Noise& noise) {
    bring(j, k, noise);
    support_level_.push_back(static_cast<uint8_t>(level_of(stamp(j))));
    set_stamp(j, kInSupport | static_cast<uint32_t>(support_.size()));
    support_.push_back(j);
  }
  std::span<const uint32_t> support() const { return support_; }
  uint32_t support_level(size_t s) const { return support_level_[s]; }
  // One step of the support's s-th coordinate, its gradient's constant term a (the minibatch
  // part and the aggregate).
  void step_support(size_t s, double a, Noise& noise) { advance(support_[s], support_level_[s], a, 1, noise); }
  // One step of coordinate j (the dense and full-batch paths: every coordinate at once).
  void step_one(uint32_t j, double a, Noise& noise) { advance(j, level(j), a, 1, noise); }
  bool finite(uint32_t j) const { return std::isfinite(rec(j)[0]) && (!two_ || std::isfinite(rec(j)[1])); }
  void leave_support(uint64_t at) {
    const uint32_t s = offset(at);
    for (size_t i = 0; i < support_.size(); ++i) {
      set_stamp(support_[i], (static_cast<uint32_t>(support_level_[i]) << kLevelShift) | s);
    }
    support_.clear();
    support_level_.clear();
  }
  // Prefetches coordinate j's position alone (a dot at theta): the first number of its record.
  void prefetch_x(uint32_t j) const { __builtin_prefetch(rec(j)); }
  // Prefetches coordinate j's record (its position, momentum, aggregate entry and, in the
  // record layout, stamp), and in the compact layout its stamp, before a walk of the batch. A
  // record of three slots may end on the next cache line; of one, two or four it never does.
  void prefetch(uint32_t j) const {
    const double* r = rec(j);
    __builtin_prefetch(r);
    if (w_ == 3) __builtin_prefetch(r + 2);
    if (!own_stamps_.empty()) __builtin_prefetch(&own_stamps_[j]);
  }

  // Brings every coordinate to k. Returns whether every coordinate (position and momentum) is
  // finite; *sq (if given) gets |x|^2.
  bool sync(uint64_t k, Noise& noise, double* sq = nullptr) {
    bool finite_all = true;
    double s = 0;
    for (uint64_t j = 0; j < d_; ++j) {
      const uint32_t jj = static_cast<uint32_t>(j);
      bring(jj, k, noise);
      set_stamp(jj, stamp(jj) & kLevelMask);
      const double v = x(jj);
      finite_all &= finite(jj);
      s += v * v;
    }
    base_ = k;
    if (sq) *sq = s;
    return finite_all;
  }
  // Brings to k the coordinates whose bit is set in `in_rows` (bit j of word j / 64: the
  // coordinates some row of the store has) and leaves the others where they are: a refresh
  // changes no gradient term of a coordinate in no row (its aggregate entry stays 0), so its
  // jump over the refresh is the same in one piece or two, and it is brought current when
  // every coordinate is (sync). The stamps stay offsets from the last sync. Returns whether
  // every coordinate brought is finite; *sq (if given) gets their |x|^2.
  bool catch_up_rows(uint64_t k, Noise& noise, std::span<const uint64_t> in_rows, double* sq = nullptr) {
    bool finite_all = true;
    double s = 0;
    for_each_in_rows(in_rows, [&](uint32_t j) {
      bring(j, k, noise);
      finite_all &= finite(j);
      s += x(j) * x(j);
    });
    if (sq) *sq = s;
    return finite_all;
  }
  // Zeroes the aggregate entries of the coordinates whose bit is set in `in_rows` (every
  // entry when it is empty), before a refresh rebuilds A. The others stay 0 from the start:
  // only a row's coordinates are ever added to (a step's update, a refresh), so at d = 54.7M a
  // refresh writes the 3.6M entries of the coordinates in rows, not 54.7M records.
  void zero_aggregate(std::span<const uint64_t> in_rows) {
    if (!agg_) return;
    if (in_rows.empty()) {
      a().fill(0.0);
      return;
    }
    const StridedSpan<double> av = a();
    for_each_in_rows(in_rows, [&](uint32_t j) { av[j] = 0.0; });
  }
  // After a step of every coordinate at once (the dense and full-batch paths): all are at k.
  void all_at(uint64_t k) {
    base_ = k;
    for (uint64_t j = 0; j < d_; ++j) set_stamp(j, stamp(j) & kLevelMask);
  }
  bool gap_due(uint64_t k) const { return k - base_ >= kMaxGap; }

  // Between iterations (the support empty): x, the momenta, the stamps and the last sync, each
  // as one array. load() checks every stamp against the levels this run has, so that a damaged
  // checkpoint cannot send a coordinate to a dynamics that does not exist. The aggregate is the
  // chain's to save (save_aggregate), after its noise.
  void save(StateWriter& out) const {
    out.section("LAZY");
    out.u64("a chain's last sync", base_);
    out.array("a chain's coordinates", x());
    out.array("a chain's momenta", p());
    out.array("a chain's stamps", StridedSpan<const uint32_t>(stamps_));
  }
  Status load(StateReader& in) {
    AGLD_RETURN_IF_ERROR(in.section("LAZY", "a chain's coordinates"));
    AGLD_RETURN_IF_ERROR(in.u64("a chain's last sync", &base_));
    AGLD_RETURN_IF_ERROR(in.array("a chain's coordinates", x()));
    AGLD_RETURN_IF_ERROR(in.array("a chain's momenta", p()));
    AGLD_RETURN_IF_ERROR(in.array("a chain's stamps", stamps_));
    for (uint64_t j = 0; j < d_; ++j) {
      const uint32_t st = stamp(j);
      if ((st & kInSupport) || level_of(st) >= dyn_.size() || (st & kOffsetMask) > kMaxGap) {
        return in.corrupt("a chain's stamp " + std::to_string(st) + " is not one this run can have");
      }
    }
    support_.clear();
    support_level_.clear();
    return Status::ok();
  }
  // The aggregate as one array (empty without one).
  void save_aggregate(StateWriter& out) const { out.array("a chain's aggregate", a()); }
  Status load_aggregate(StateReader& in) { return in.array("a chain's aggregate", a()); }

 private:
  // A coordinate's record, in 8-byte slots: x, the momentum (two numbers a coordinate), the
  // aggregate entry, and in the record layout last the stamp (in the slot's first 4 bytes).
  // What a jump of coordinate j reads and writes is then together: one cache miss (two when
  // a record of three slots crosses a line, 1 time in 4), not one an array. At d = 54.7M
  // each array is hundreds of MB, read at random. The stamp's slot costs 4 bytes a
  // coordinate more than an array of stamps (the compact layout), which the memory plan
  // takes when the record layout does not fit the budget (sampler/memory_plan.cpp).
  static constexpr uint64_t width(int state_dim, bool aggregate, bool stamps_in_record) {
    return static_cast<uint64_t>(state_dim) + (aggregate ? 1 : 0) + (stamps_in_record ? 1 : 0);
  }
  uint32_t stamp(uint64_t j) const { return stamps_[j]; }
  void set_stamp(uint64_t j, uint32_t st) { stamps_[j] = st; }
  double* rec(uint32_t j) { return rec_.data() + uint64_t{j} * w_; }
  const double* rec(uint32_t j) const { return rec_.data() + uint64_t{j} * w_; }
  // f(j) for each j < d whose bit is set in `bits` (bit j of word j / 64), in increasing order,
  // each record prefetched kAhead coordinates before f reads it: the coordinates some row has
  // are sparse among d (3.6M of 54.7M in the d-independence bench), so each is a cache miss the
  // hardware's stream prefetch does not foresee; these overlap instead of queueing.
  template <class F>
  void for_each_in_rows(std::span<const uint64_t> bits, F f) const {
    constexpr size_t kAhead = 16;
    uint32_t ring[kAhead];
    size_t head = 0, held = 0;
    for (uint64_t w = 0; w < bits.size(); ++w) {
      for (uint64_t b = bits[w]; b != 0; b &= b - 1) {
        const uint64_t j = w * 64 + static_cast<uint64_t>(std::countr_zero(b));
        if (j >= d_) break;
        prefetch(static_cast<uint32_t>(j));
        if (held < kAhead) {
          ring[held++] = static_cast<uint32_t>(j);
          continue;
        }
        f(ring[head]);
        ring[head] = static_cast<uint32_t>(j);
        head = (head + 1) % kAhead;
      }
    }
    for (size_t i = 0; i < held; ++i) f(ring[(head + i) % kAhead]);
  }
  static uint32_t level_of(uint32_t stamp) { return (stamp & kLevelMask) >> kLevelShift; }
  uint32_t level(uint32_t j) const { return in_support(j) ? support_level_[slot(j)] : level_of(stamp(j)); }
  uint32_t offset(uint64_t k) const { return static_cast<uint32_t>(k - base_); }
  // k steps of coordinate j at level l with constant gradient term a.
  void advance(uint32_t j, uint32_t l, double a, uint64_t k, Noise& noise) {
    if (dyn_[l].still) return;
    const GaussianJumps& jumps = dyn_[l].jumps;
    double* r = rec(j);
    const double scale = scale_[l];
    if (two_) {
      auto normal = [&noise, scale] { return scale * noise(); };
      jumps.apply(r[0], r[1], a, k, normal);
    } else {
      r[0] = jumps.apply(r[0], a, k, scale * noise());
    }
  }

  std::vector<CoordinateDynamics> dyn_;  // a level's dynamics
  std::vector<double> scale_;            // a level's noise scale
  double inv_prior_var_;
  uint64_t d_;
  bool two_ = false;       // a momentum a coordinate
  bool agg_ = false;       // an aggregate entry a coordinate
  bool midpoint_ = false;  // the gradient at x + c p (hmc2)
  uint64_t w_ = 2;         // 8-byte slots a record
  HugeArray<double> rec_;  // d records, read at random: huge pages (common/huge_array.hpp)
  HugeArray<uint32_t> own_stamps_;  // the compact layout's stamps (empty in the record layout)
  StridedSpan<uint32_t> stamps_;    // the stamps, in the records or own_stamps_
  uint64_t base_ = 0;      // the iteration of the last sync
  std::vector<uint32_t> support_;
  std::vector<uint8_t> support_level_;  // the support's levels, by slot
};

}  // namespace agld::sampler
