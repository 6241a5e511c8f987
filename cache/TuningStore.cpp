// The autotuning store: a JSON object {"version": 1, "entries": {key:
// {"best", "best_ms", "measured": {config: ms}, "updated"}}}, read and
// replaced under flock on "<path>.lock".

#include <kiln/cache.h>
#include <kiln/tuning_store.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace kiln {

namespace {

constexpr int kFormat = 1;

/// An flock on a side file, held for the object's life.
class FileLock {
public:
  FileLock(const std::string &path, bool exclusive) {
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0)
      while (::flock(fd_, exclusive ? LOCK_EX : LOCK_SH) != 0 && errno == EINTR) {
      }
  }
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  ~FileLock() {
    if (fd_ >= 0)
      ::close(fd_); // releases the lock
  }
  bool held() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

std::string now() {
  std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

nlohmann::json emptyStore() { return {{"version", kFormat}, {"entries", nlohmann::json::object()}}; }

/// The store's contents; a corrupt file is set aside (the caller holds the
/// exclusive lock when `repair` is set) and an empty store returned.
nlohmann::json readStore(const std::string &path, bool repair) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return emptyStore();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string why;
  try {
    nlohmann::json store = nlohmann::json::parse(text.str());
    if (store.value("version", 0) == kFormat && store.contains("entries") && store["entries"].is_object()) {
      for (auto &[key, entry] : store["entries"].items())
        if (!entry.is_object() || !entry.contains("best") || !entry["best"].is_string() ||
            !entry.contains("measured") || !entry["measured"].is_object())
          throw std::runtime_error("entry '" + key + "' is malformed");
      return store;
    }
    why = "it is not a Kiln tuning store of version " + std::to_string(kFormat);
  } catch (const std::exception &e) {
    why = e.what();
  }
  if (repair) {
    std::string aside = path + ".corrupt-" + std::to_string(std::time(nullptr));
    fs::rename(path, aside, ec);
    std::cerr << "kiln: the tuning store " << path << " is unreadable (" << why << "); set aside as " << aside
              << ", starting afresh\n";
  }
  return emptyStore();
}

bool writeStore(const std::string &path, const nlohmann::json &store) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  std::string temp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::trunc);
    out << store.dump(1) << "\n";
    if (!out) {
      std::cerr << "kiln: cannot write the tuning store " << path << "\n";
      fs::remove(temp, ec);
      return false;
    }
  }
  fs::rename(temp, path, ec);
  if (ec) {
    std::cerr << "kiln: cannot replace the tuning store " << path << ": " << ec.message() << "\n";
    fs::remove(temp, ec);
    return false;
  }
  return true;
}

TuningStore::Entry entryOf(const nlohmann::json &j) {
  TuningStore::Entry e;
  e.best = j.at("best").get<std::string>();
  e.best_ms = j.value("best_ms", 0.0);
  for (auto &[config, ms] : j.at("measured").items())
    if (ms.is_number())
      e.measured[config] = ms.get<double>();
  e.updated = j.value("updated", "");
  return e;
}

nlohmann::json jsonOf(const TuningStore::Entry &e) {
  return {{"best", e.best}, {"best_ms", e.best_ms}, {"measured", e.measured}, {"updated", e.updated}};
}

/// Holds the exclusive lock; creates the store's folder first.
FileLock lockForWriting(const std::string &path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  return FileLock(path, true);
}

} // namespace

TuningStore::TuningStore(std::string path) : path_(std::move(path)) {}

std::string TuningStore::default_path() { return cache_root() + "/autotune.json"; }

std::optional<TuningStore::Entry> TuningStore::find(const std::string &key) const {
  FileLock lock(path_, false);
  nlohmann::json store = readStore(path_, false);
  auto &entries = store["entries"];
  if (!entries.contains(key))
    return std::nullopt;
  return entryOf(entries[key]);
}

std::map<std::string, TuningStore::Entry> TuningStore::all() const {
  FileLock lock(path_, false);
  nlohmann::json store = readStore(path_, false);
  std::map<std::string, Entry> result;
  for (auto &[key, entry] : store["entries"].items())
    result[key] = entryOf(entry);
  return result;
}

bool TuningStore::record(const std::string &key, const Entry &entry) const {
  FileLock lock = lockForWriting(path_);
  if (!lock.held()) {
    std::cerr << "kiln: cannot lock the tuning store " << path_ << "\n";
    return false;
  }
  nlohmann::json store = readStore(path_, true);
  Entry merged = store["entries"].contains(key) ? entryOf(store["entries"][key]) : Entry{};
  for (const auto &[config, ms] : entry.measured)
    merged.measured[config] = ms;
  if (!entry.best.empty() && !merged.measured.count(entry.best))
    merged.measured[entry.best] = entry.best_ms;
  merged.best.clear();
  for (const auto &[config, ms] : merged.measured)
    if (merged.best.empty() || ms < merged.best_ms) {
      merged.best = config;
      merged.best_ms = ms;
    }
  merged.updated = now();
  store["entries"][key] = jsonOf(merged);
  return writeStore(path_, store);
}

std::string TuningStore::export_best() const {
  nlohmann::json out = {{"kiln_tuning_export", kFormat}, {"best", nlohmann::json::object()}};
  for (const auto &[key, entry] : all())
    out["best"][key] = {{"config", entry.best}, {"ms", entry.best_ms}};
  return out.dump(1) + "\n";
}

void TuningStore::import_best(const std::string &json) const {
  nlohmann::json in;
  try {
    in = nlohmann::json::parse(json);
  } catch (const std::exception &e) {
    throw std::runtime_error(std::string("the tuning export does not parse: ") + e.what());
  }
  if (in.value("kiln_tuning_export", 0) != kFormat || !in.contains("best") || !in["best"].is_object())
    throw std::runtime_error("the text is not a Kiln tuning export (version " + std::to_string(kFormat) + ")");
  FileLock lock = lockForWriting(path_);
  nlohmann::json store = readStore(path_, true);
  for (auto &[key, best] : in["best"].items()) {
    if (!best.contains("config") || !best["config"].is_string())
      throw std::runtime_error("the tuning export's entry '" + key + "' has no config");
    Entry e;
    e.best = best["config"].get<std::string>();
    e.best_ms = best.value("ms", 0.0);
    e.measured[e.best] = e.best_ms;
    e.updated = now();
    store["entries"][key] = jsonOf(e);
  }
  writeStore(path_, store);
}

} // namespace kiln
