// Kiln's on-disk stores (compiled kernels; autotuning results), under
// KILN_CACHE_DIR (default ~/.cache/kiln). Entries are written atomically
// (a temporary, then rename), so concurrent processes never see half an
// entry; entries that fail their checksums are detected, set aside and
// rebuilt. Public header: no MLIR.
//
// Trust: what the stores read back steers code generation, so only the
// effective user may have written it. They write only into directories of
// that user's that no one else can write (private_directory_problem), make
// every temporary with O_EXCL and never through a symbolic link, and read
// only regular files that user owns (read_cache_file); anything else is
// ignored with a warning, and the call goes on without the cache.
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
/// $HOME/.cache/kiln, else the effective user's home directory (from the
/// password database) + /.cache/kiln; "" when the user has none: caching is
/// then off (never a directory other users share, such as /tmp).
std::string cache_root();

/// Why the stores must not write into `directory`, or "" when they may.
/// Missing directories are created (mode 0700, parents too); `directory`
/// must then be a directory, not a symbolic link, owned by the effective
/// user and writable by no one else, so that no other user can plant or
/// swap what the stores read back.
std::string private_directory_problem(const std::string &directory);

/// A file the stores read back, opened without following a symbolic link.
struct CacheFile {
  enum Status { read, missing, refused };
  Status status = missing;
  std::string contents; ///< when read
  std::string why;      ///< when refused: why, naming the file
};
/// Reads `path` when it is a regular file owned by the effective user and
/// writable by no one else; refuses it otherwise (another user's file, a
/// link, a FIFO, ...).
CacheFile read_cache_file(const std::string &path);

/// Prints "kiln: <message>" on stderr the first time this process meets it:
/// a store's warning is said once, however often its cause is met.
void warn_once(const std::string &message);

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

  /// The entry under `key` (lowercase hex), or nothing when there is none,
  /// it fails its checksums (a corrupt entry is moved aside and reported
  /// once on stderr, never trusted), or it is not the effective user's own
  /// (ignored, with a warning).
  std::optional<Entry> load(const std::string &key) const;
  /// Writes the entry under `key`; when another process already wrote it,
  /// keeps theirs. Never leaves a partial entry. Returns false (and says
  /// why on stderr) if the store cannot be written, or its directory is not
  /// private (private_directory_problem): caching is best effort. File
  /// names are plain names (no '/'), other than meta.json.
  bool store(const std::string &key, const Entry &entry) const;

  const std::string &directory() const { return directory_; }

private:
  std::string path(const std::string &key) const;
  std::string directory_;
};

} // namespace kiln
