// The content-addressed store: <root>/<key[0:2]>/<key>/{meta.json, files...}.
// A writer builds the entry in a private temporary folder and renames it
// into place: rename is atomic, and fails harmlessly when another process
// got there first. A reader checks every file against the SHA-256 recorded
// in meta.json before trusting the entry.

#include <kiln/cache.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <unistd.h>

namespace fs = std::filesystem;

namespace kiln {

std::string cache_root() {
  if (const char *dir = std::getenv("KILN_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/kiln";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/kiln";
  return "/tmp/kiln-cache";
}

BlobStore::BlobStore(std::string directory) : directory_(std::move(directory)) {}

std::string BlobStore::path(const std::string &key) const {
  return directory_ + "/" + key.substr(0, 2) + "/" + key;
}

namespace {

std::string readFile(const fs::path &file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool writeFile(const fs::path &file, std::string_view data) {
  std::ofstream out(file, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(out);
}

std::string uniqueSuffix() {
  static std::atomic<unsigned> counter{0};
  std::random_device random;
  return std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(random());
}

} // namespace

std::optional<BlobStore::Entry> BlobStore::load(const std::string &key) const {
  fs::path dir = path(key);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return std::nullopt;
  auto reject = [&](const std::string &why) -> std::optional<Entry> {
    // Set the entry aside (a later writer rebuilds it); say so once.
    fs::path aside = fs::path(directory_) / ("corrupt-" + key + "-" + uniqueSuffix());
    std::error_code ignored;
    fs::rename(dir, aside, ignored);
    fs::remove_all(aside, ignored);
    std::cerr << "kiln: ignoring corrupt cache entry " << dir.string() << " (" << why << ")\n";
    return std::nullopt;
  };
  Entry entry;
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(readFile(dir / "meta.json"));
    if (manifest.at("key").get<std::string>() != key)
      return reject("its manifest names another key");
    entry.metadata = manifest.at("metadata").get<std::string>();
    for (auto &[name, digest] : manifest.at("files").items()) {
      std::string data = readFile(dir / name);
      if (sha256_hex(data) != digest.get<std::string>())
        return reject("checksum mismatch in " + name);
      entry.files[name] = std::vector<char>(data.begin(), data.end());
    }
  } catch (const std::exception &e) {
    return reject(std::string("unreadable manifest: ") + e.what());
  }
  return entry;
}

bool BlobStore::store(const std::string &key, const Entry &entry) const {
  fs::path final = path(key);
  std::error_code ec;
  fs::create_directories(final.parent_path(), ec);
  fs::path temp = final.parent_path() / (".tmp-" + key + "-" + uniqueSuffix());
  fs::create_directories(temp, ec);
  if (ec) {
    std::cerr << "kiln: cannot write the cache at " << directory_ << ": " << ec.message() << "\n";
    return false;
  }
  nlohmann::json manifest;
  manifest["key"] = key;
  manifest["metadata"] = entry.metadata;
  manifest["files"] = nlohmann::json::object();
  bool ok = true;
  for (const auto &[name, data] : entry.files) {
    std::string_view bytes(data.data(), data.size());
    ok = ok && writeFile(temp / name, bytes);
    manifest["files"][name] = sha256_hex(bytes);
  }
  ok = ok && writeFile(temp / "meta.json", manifest.dump(2));
  if (!ok) {
    fs::remove_all(temp, ec);
    std::cerr << "kiln: cannot write the cache entry " << final.string() << "\n";
    return false;
  }
  fs::rename(temp, final, ec);
  if (ec) // another process stored it first: theirs is as good as ours
    fs::remove_all(temp, ec);
  return true;
}

} // namespace kiln
