// The autotuner's results on disk: one JSON file of entries, each the best
// config of one tuned problem and the time of every config measured for it
// (so a changed search space reuses what was measured). Public header: no
// MLIR.
//
// Concurrency: every update is a read-modify-write under an exclusive lock
// on a side file (flock), replacing the JSON file atomically (a temporary,
// then rename), so processes writing at once lose nothing and readers never
// see half a file. A file that does not parse is set aside (renamed
// "<name>.corrupt-<time>"), reported once on stderr, and started afresh.
#pragma once

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

  /// The store at `path` (default: $KILN_CACHE_DIR/autotune.json).
  explicit TuningStore(std::string path = default_path());
  static std::string default_path();

  /// The entry of `key`, if any.
  std::optional<Entry> find(const std::string &key) const;
  /// Merges `entry` into `key`'s: timings are joined (new ones win), the
  /// best becomes the fastest of all measured. Returns false (saying why on
  /// stderr) when the store cannot be written: tuning results are a cache.
  bool record(const std::string &key, const Entry &entry) const;
  /// Every entry.
  std::map<std::string, Entry> all() const;

  /// The best configs alone, as JSON text for deployment.
  std::string export_best() const;
  /// Merges exported best configs in (they replace what is stored for their
  /// keys); throws std::runtime_error on text that is not an export.
  void import_best(const std::string &json) const;

  const std::string &path() const { return path_; }

private:
  std::string path_;
};

} // namespace kiln
