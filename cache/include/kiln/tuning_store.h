// The autotuner's results on disk: one JSON file of entries, each the best
// config of one tuned problem and the time of every config measured for it
// (so a changed search space reuses what was measured). Public header: no
// MLIR.
//
// Concurrency: every update is a read-modify-write under an exclusive lock
// on a side file (flock), replacing the JSON file atomically (a temporary,
// then rename), so processes writing at once lose nothing and readers,
// which take no lock, never see half a file. A file that does not parse, or
// is not the user's own (cache.h), is ignored by readers and set aside by
// the next update (renamed "<name>.corrupt-<time>-<pid>-<n>", never over
// another file), reported on stderr, and started afresh.
//
// Trust: a malformed entry (no best config, a time that is not a number of
// ms at least 0, ...) is skipped with one warning a process; the file's
// other entries still count. Whether a best config parses and fits the
// op's space is for the autotuner and the ops to judge (autotune.h).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace kiln {

class TuningStore {
public:
  struct Entry {
    std::string best;                     ///< the fastest config ("BLOCK=1024,num_warps=4")
    double best_ms = 0;
    std::map<std::string, double> measured; ///< every config measured -> median ms
    std::string updated;                  ///< when (UTC, ISO 8601)
  };

  /// The store at `path` (default: $KILN_CACHE_DIR/autotune.json; "" when
  /// there is no cache root: nothing is found and nothing recorded).
  explicit TuningStore(std::string path = default_path());
  static std::string default_path();

  /// The entry of `key`, if any and well formed.
  std::optional<Entry> find(const std::string &key) const;
  /// Merges `entry` into `key`'s: timings are joined (new ones win), the
  /// best becomes the fastest of all measured. Returns false (saying why on
  /// stderr, once) when the store cannot be written or its directory is not
  /// private (cache.h): tuning results are a cache.
  bool record(const std::string &key, const Entry &entry) const;
  /// Every well-formed entry.
  std::map<std::string, Entry> all() const;

  /// The best configs alone, as JSON text for deployment.
  std::string export_best() const;
  /// Merges exported best configs in (they replace what is stored for their
  /// keys). Every entry is checked first: a config (`config_problem`, when
  /// given, says why a config's text is not one, or "") and a time in ms of
  /// at least 0; when any fails, nothing is imported. Throws
  /// std::runtime_error naming the problem: text that is not an export,
  /// the invalid entries, or a store that cannot be written.
  void import_best(const std::string &json,
                   const std::function<std::string(const std::string &)> &config_problem = {}) const;

  const std::string &path() const { return path_; }

private:
  std::string path_;
};

} // namespace kiln
