#include "cli_common.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <csignal>
#include <fmt/format.h>
#include <iostream>

#include "agld/file.hpp"
#include "agld/run_summary.hpp"
#include "agld/store.hpp"

namespace agld::cli {

int exit_code_for(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk: return kExOk;
    case Status::Code::kNotFound: return kExNoInput;
    case Status::Code::kCorruption:
    case Status::Code::kDataError:
    case Status::Code::kNotSupported: return kExDataErr;
    case Status::Code::kInvalidArgument: return kExUsage;
    case Status::Code::kIOError: return kExIOErr;
    case Status::Code::kInternal: return kExSoftware;
  }
  return kExSoftware;
}

int fail(const Status& s) {
  std::string msg = s.message();
  for (char& c : msg) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << "agld: " << msg << std::endl;
  return exit_code_for(s);
}

uint64_t parse_size(const std::string& text) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw CLI::ValidationError("size", "expected a size such as 512M or 8G, got '" + text + "'");
  }
  std::string unit = text.substr(pos);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (unit.size() == 2 && (unit[1] == 'i' || unit[1] == 'I')) unit.pop_back();
  double mult = 1;
  if (unit.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(unit[0]))) {
      case 'K': mult = 1024.0; break;
      case 'M': mult = 1024.0 * 1024; break;
      case 'G': mult = 1024.0 * 1024 * 1024; break;
      case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
      default: unit = "?";
    }
  }
  if ((unit.size() > 1) || unit == "?" || !(v >= 0) || !std::isfinite(v)) {
    throw CLI::ValidationError("size", "expected a size such as 512M or 8G, got '" + text + "'");
  }
  return static_cast<uint64_t>(v * mult);
}

std::string size_text(uint64_t bytes) {
  constexpr const char* kUnits = "KMGT";
  for (int u = 3; u >= 0; --u) {
    const uint64_t unit = uint64_t{1} << (10 * (u + 1));
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + kUnits[u];
  }
  return std::to_string(bytes);
}

CLI::Validator size_validator() {
  return CLI::Validator(
      [](std::string& s) {
        try {
          parse_size(s);
        } catch (const CLI::ValidationError& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "SIZE");
}

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int sig) {
  if (g_stop.exchange(true)) {
    remove_pending_temporaries();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}
}  // namespace

StopOnSignal::StopOnSignal() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

StopOnSignal::~StopOnSignal() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

bool StopOnSignal::requested() { return g_stop.load(); }

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) != 0; }

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, units[u]);
}

std::string human_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  auto t = static_cast<long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

nlohmann::json json_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json by_rows_json(const std::vector<RowsClassSummary>& classes) {
  nlohmann::json out = nlohmann::json::array();
  for (const RowsClassSummary& c : classes) {
    out.push_back({{"rows", {c.min_rows, c.max_rows}},
                   {"intercept", c.intercept},
                   {"coordinates", c.coordinates},
                   {"with_rhat", c.with_rhat},
                   {"rhat_above_1_01", c.rhat_above},
                   {"rhat_above_1_1", c.rhat_above_1_1},
                   {"max_rhat", json_number(c.max_rhat)},
                   {"max_rhat_coordinate", c.max_rhat_name.empty() ? nlohmann::json() : nlohmann::json(c.max_rhat_name)}});
  }
  return out;
}

nlohmann::json store_identity(const Store& s) {
  const StoreMeta& m = s.meta();
  nlohmann::json sources = nlohmann::json::array();
  for (const SourceInfo& src : m.sources) {
    sources.push_back({{"name", src.name},
                       {"size", src.size ? nlohmann::json(*src.size) : nlohmann::json()},
                       {"mtime", src.mtime ? nlohmann::json(*src.mtime) : nlohmann::json()}});
  }
  return {{"path", s.path()},        {"file_size", s.file_size()}, {"rows", m.rows},
          {"features", m.features},  {"nnz", m.nnz},               {"chunks", s.chunk_count()},
          {"labels", m.label_kind == LabelKind::kBinary ? "binary" : "real"},
          {"part", m.options.part},  {"sources", sources},         {"created_by", m.created_by}};
}

}  // namespace agld::cli
