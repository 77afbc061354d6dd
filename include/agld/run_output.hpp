// The run directory of `agld sample` (docs/samplers.md): config.json, metrics.csv, one
// Stan CSV a chain (draws_ID.csv, as CmdStan names them), posterior.npy and
// diagnostics.npy; and that of `agld optimize`: mode.npy and config.json (finish_tables);
// and, while a run goes on, its checkpoint. Every file is written through the FileSystem
// given to create() (FileSystem::create_atomic) and appears only when finish() commits it
// (the checkpoint: when it is complete): a failed run leaves no partial file where a good one
// was expected.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agld/file.hpp"
#include "agld/sample.hpp"
#include "agld/status.hpp"

namespace agld {

// A NumPy .npy file (format 1.0) holding a C-order float64 array of shape (rows, cols).
std::string encode_npy_f64(uint64_t rows, uint64_t cols, std::span<const double> data);

// A float64 .npy file's array, viewed in place (rows x cols, C order; a 1-D array is one
// column). decode_npy_f64 checks the header and that the data is exactly the shape's size:
// anything else is corruption naming what is wrong.
struct NpyView {
  uint64_t rows = 0, cols = 0;
  ByteSpan data;
  double at(uint64_t row, uint64_t col) const;
};
Status decode_npy_f64(ByteSpan file, NpyView* out);

// The draws file of chain `id`: "draws_ID.csv".
std::string draws_file_name(uint64_t id);

// Column names of the draws files for the tracked coordinates: "theta.J" with J the 1-based
// feature number (as in the LIBSVM file), and "intercept" for the intercept.
std::vector<std::string> tracked_names(const ResolvedSample& run);

class RunWriter {
 public:
  // Creates dir if it does not exist; a writer destroyed before finish() succeeded leaves no
  // files and removes the directories it created (if they are still empty). In an existing
  // dir, removes the temporaries a killed run left (FileSystem::remove_stale_temporaries).
  static Status create(const std::string& dir, FileSystem& fs, std::unique_ptr<RunWriter>* out);

  // Opens the output files (uncommitted) and writes the heads of every chain's draws file
  // (the comment lines, then the column names) and of metrics.csv.
  Status start(const ResolvedSample& run, const std::vector<std::string>& comments);
  Status draw(const DrawRecord& d);
  // Every chain's draws file, new, with these heads (start() calls it; again when the run goes
  // on to a longer stage, SampleObserver::on_stage): a file it replaces goes uncommitted.
  Status open_draws(const ResolvedSample& run, const std::vector<std::string>& comments);
  Status eval(const EvalRecord& e);
  // Writes posterior.npy, diagnostics.npy and config.json (config_json, built by the
  // caller), adds the trailing comments of the draws files, and commits every file.
  Status finish(const SampleResult& result, const std::string& config_json);

  // A float64 .npy table of shape (d, columns), each column d values.
  struct Table {
    std::string name;
    std::vector<const std::vector<double>*> columns;
  };
  // Writes the tables and config.json, and commits them with every file start() opened (a
  // directory without draws, such as agld optimize's, need not call start()).
  Status finish_tables(const std::vector<Table>& tables, const std::string& config_json);
  // The run's checkpoint, DIR/checkpoint (docs/reliability.md): `save` streams the state into
  // a new file, which replaces the previous checkpoint only once it is complete and synced
  // (create_atomic): a failure (a full disk) leaves the previous checkpoint as it was, and no
  // partial file. *bytes, if given: the new checkpoint's size.
  Status checkpoint(const std::function<Status(WritableFile&)>& save, uint64_t* bytes = nullptr);
  std::string checkpoint_path() const { return dir_ + "/" + kCheckpointFile; }
  static constexpr const char* kCheckpointFile = "checkpoint";

  const std::string& dir() const { return dir_; }

 private:
  struct Out;
  RunWriter() = default;
  Status flush(Out& o, bool all);
  Status open(const std::string& name, std::unique_ptr<Out>* out);

  std::string dir_;
  FileSystem* fs_ = nullptr;
  std::vector<std::unique_ptr<Out>> outs_;
  uint64_t first_chain_ = 1;
  std::vector<Out*> draws_;  // chain first_chain_ + c at c
  Out* metrics_ = nullptr;
  size_t chains_ = 0;
  std::vector<std::string> created_;  // directories create() made, deepest first
  bool finished_ = false;

 public:
  ~RunWriter();
};

}  // namespace agld
