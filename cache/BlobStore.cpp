// The content-addressed store: <root>/<key[0:2]>/<key>/{meta.json, files...}.
// A writer builds the entry in a temporary folder only it can enter
// (mkdtemp; its files created with O_EXCL) and renames it into place:
// rename is atomic, and fails harmlessly when another process got there
// first. A reader checks that the entry is its user's own and every file
// against the SHA-256 recorded in meta.json before trusting the entry.

#include <kiln/cache.h>

#include "cache/CacheFiles.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace kiln {

namespace {

/// Creates `file` (which must not exist, nor be a link) holding `data`.
bool writeNewFile(const fs::path &file, std::string_view data) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return false;
  const bool written = write_all(fd, data) == 0;
  return ::close(fd) == 0 && written;
}

std::string uniqueSuffix() {
  static std::atomic<unsigned> counter{0};
  std::random_device random;
  return std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(random());
}

/// Keys name directories: hex digits only, so that no key reaches outside
/// the store.
bool isKey(const std::string &key) {
  return key.size() >= 2 && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

/// A file name of an entry: one plain name inside the entry's folder.
bool isPlainName(const std::string &name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

} // namespace

BlobStore::BlobStore(std::string directory) : directory_(std::move(directory)) {}

std::string BlobStore::path(const std::string &key) const {
  return directory_ + "/" + key.substr(0, 2) + "/" + key;
}

std::optional<BlobStore::Entry> BlobStore::load(const std::string &key) const {
  if (!isKey(key))
    return std::nullopt;
  fs::path dir = path(key);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0)
    return std::nullopt;
  // Another user's entry (or a link to one) is not this store's to trust,
  // nor to move.
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    warn_once("ignoring the cache entry " + dir.string() + ": it is not a directory of this user's");
    return std::nullopt;
  }
  auto reject = [&](const std::string &why) -> std::optional<Entry> {
    // Set the entry aside (a later writer rebuilds it); say so once.
    fs::path aside = fs::path(directory_) / ("corrupt-" + key + "-" + uniqueSuffix());
    std::error_code ignored;
    fs::rename(dir, aside, ignored);
    fs::remove_all(aside, ignored);
    std::cerr << "kiln: ignoring corrupt cache entry " << dir.string() << " (" << why << ")\n";
    return std::nullopt;
  };
  // A file the entry holds; its refusal (a link, another user's file)
  // rejects the entry.
  auto contentsOf = [&](const std::string &name, std::string &why) -> std::optional<std::string> {
    CacheFile file = read_cache_file((dir / name).string());
    if (file.status == CacheFile::read)
      return std::move(file.contents);
    why = file.status == CacheFile::missing ? name + " is missing" : file.why;
    return std::nullopt;
  };
  Entry entry;
  try {
    std::string why;
    std::optional<std::string> meta = contentsOf("meta.json", why);
    if (!meta)
      return reject("unreadable manifest: " + why);
    nlohmann::json manifest = nlohmann::json::parse(*meta);
    if (manifest.at("key").get<std::string>() != key)
      return reject("its manifest names another key");
    entry.metadata = manifest.at("metadata").get<std::string>();
    for (auto &[name, digest] : manifest.at("files").items()) {
      if (!isPlainName(name) || name == "meta.json")
        return reject("its manifest names the file '" + name + "'");
      std::optional<std::string> data = contentsOf(name, why);
      if (!data)
        return reject(why);
      if (sha256_hex(*data) != digest.get<std::string>())
        return reject("checksum mismatch in " + name);
      entry.files[name] = std::vector<char>(data->begin(), data->end());
    }
  } catch (const std::exception &e) {
    return reject(std::string("unreadable manifest: ") + e.what());
  }
  return entry;
}

bool BlobStore::store(const std::string &key, const Entry &entry) const {
  if (!isKey(key)) {
    std::cerr << "kiln: not caching under the key '" << key << "': cache keys are lowercase hex digits\n";
    return false;
  }
  for (const auto &[name, data] : entry.files)
    if (!isPlainName(name) || name == "meta.json") {
      std::cerr << "kiln: not caching the entry " << key << ": '" << name << "' is not a file name it may hold\n";
      return false;
    }
  fs::path final = path(key);
  for (const std::string &dir : {directory_, final.parent_path().string()})
    if (std::string problem = private_directory_problem(dir); !problem.empty()) {
      warn_once("not caching compiled kernels in " + directory_ + ": " + problem);
      return false;
    }
  nlohmann::json manifest;
  manifest["key"] = key;
  manifest["metadata"] = entry.metadata;
  manifest["files"] = nlohmann::json::object();
  for (const auto &[name, data] : entry.files)
    manifest["files"][name] = sha256_hex(std::string_view(data.data(), data.size()));
  std::string manifestText;
  try {
    manifestText = manifest.dump(2);
  } catch (const nlohmann::json::exception &) { // JSON holds UTF-8 text only
    std::cerr << "kiln: not caching the entry " << key << ": its metadata is not UTF-8 text\n";
    return false;
  }
  std::string pattern = (final.parent_path() / (".tmp-" + key + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) {
    std::cerr << "kiln: cannot write the cache at " << directory_ << ": " << std::strerror(errno) << "\n";
    return false;
  }
  fs::path temp = pattern;
  bool ok = true;
  for (const auto &[name, data] : entry.files)
    ok = ok && writeNewFile(temp / name, std::string_view(data.data(), data.size()));
  ok = ok && writeNewFile(temp / "meta.json", manifestText);
  std::error_code ec;
  if (!ok) {
    fs::remove_all(temp, ec);
    std::cerr << "kiln: cannot write the cache entry " << final.string() << "\n";
    return false;
  }
  if (::rename(temp.c_str(), final.c_str()) == 0)
    return true;
  int error = errno;
  fs::remove_all(temp, ec);
  if (error == EEXIST || error == ENOTEMPTY) // another process stored it first: theirs is as good as ours
    return true;
  std::cerr << "kiln: cannot place the cache entry " << final.string() << ": " << std::strerror(error) << "\n";
  return false;
}

} // namespace kiln
