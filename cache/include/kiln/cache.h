// Kiln's on-disk stores (compiled kernels; autotuning results), under
// KILN_CACHE_DIR (default ~/.cache/kiln). Entries are written atomically
// (a temporary, then rename), so concurrent processes never see half an
// entry; entries that fail their checksums are detected, set aside and
// rebuilt. Public header: no MLIR.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// SHA-256 of `data`, as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// The cache root: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
/// ~/.cache/kiln.
std::string cache_root();

/// A content-addressed store of blobs with metadata: the kernel cache.
class BlobStore {
public:
  /// Files of one entry, and its metadata (JSON text, caller-defined).
  struct Entry {
    std::string metadata;
    std::map<std::string, std::vector<char>> files;
  };

  /// A store in `directory` (created on first write).
  explicit BlobStore(std::string directory);

  /// The entry under `key` (hex), or nothing when there is none or it fails
  /// its checksums (a corrupt entry is moved aside and reported once on
  /// stderr, never trusted).
  std::optional<Entry> load(const std::string &key) const;
  /// Writes the entry under `key`; when another process already wrote it,
  /// keeps theirs. Never leaves a partial entry. Returns false (and says
  /// why on stderr) if the store cannot be written: caching is best effort.
  bool store(const std::string &key, const Entry &entry) const;

  const std::string &directory() const { return directory_; }

private:
  std::string path(const std::string &key) const;
  std::string directory_;
};

} // namespace kiln
