// The autotuning store: a JSON object {"version": 1, "entries": {key:
// {"best", "best_ms", "measured": {config: ms}, "updated"}}}, replaced under
// flock on "<path>.lock".

#include <kiln/cache.h>
#include <kiln/tuning_store.h>

#include "cache/CacheFiles.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace kiln {

namespace {

constexpr int kFormat = 1;

/// An exclusive flock on the store's side file, held for the object's life.
class ExclusiveLock {
public:
  explicit ExclusiveLock(const std::string &path) {
    // O_NOFOLLOW: a link planted at the lock's name must not make this
    // process create or lock a file elsewhere.
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      why_ = std::strerror(errno);
      return;
    }
    int rc;
    while ((rc = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      why_ = std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
    }
  }
  ExclusiveLock(const ExclusiveLock &) = delete;
  ExclusiveLock &operator=(const ExclusiveLock &) = delete;
  ~ExclusiveLock() {
    if (fd_ >= 0)
      ::close(fd_); // releases the lock
  }
  bool held() const { return fd_ >= 0; }
  const std::string &why() const { return why_; }

private:
  int fd_ = -1;
  std::string why_;
};

std::string now() {
  std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

nlohmann::json emptyStore() { return {{"version", kFormat}, {"entries", nlohmann::json::object()}}; }

/// The store in `text`, or nothing, saying why in `why`.
std::optional<nlohmann::json> parseStore(const std::string &text, std::string &why) {
  try {
    nlohmann::json store = nlohmann::json::parse(text);
    if (store.is_object() && store.contains("version") && store["version"] == kFormat && store.contains("entries") &&
        store["entries"].is_object())
      return store;
    why = "it is not a Kiln tuning store of version " + std::to_string(kFormat);
  } catch (const std::exception &e) {
    why = e.what();
  }
  return std::nullopt;
}

/// The store's contents for a reader: a file that is unreadable, not a
/// store, or not the user's own counts as empty (with a warning, once).
/// Readers take no lock: writers replace the file by rename, so a reader
/// opens the old file or the new one, whole.
nlohmann::json readStore(const std::string &path) {
  CacheFile file = read_cache_file(path);
  std::string why = file.why;
  if (file.status == CacheFile::read)
    if (auto store = parseStore(file.contents, why))
      return *store;
  if (file.status != CacheFile::missing)
    warn_once("ignoring the tuning store " + path + ": " + why);
  return emptyStore();
}

/// Renames `from` to `to` unless `to` exists; errno says why not.
bool renameNoReplace(const std::string &from, const std::string &to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0)
    return true;
  if (errno != EINVAL && errno != ENOSYS)
    return false;
  // A file system without RENAME_NOREPLACE: link refuses an existing name too.
  if (::link(from.c_str(), to.c_str()) != 0)
    return false;
  ::unlink(from.c_str());
  return true;
}

/// Renames the store at `path` to "<path>.corrupt-<time>-<pid>-<n>", a name
/// no file has yet, so that a store set aside is never overwritten (not
/// even by another set aside in the same second); nothing (and errno) when
/// it cannot.
std::optional<std::string> setAside(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  for (;;) {
    std::string aside = path + ".corrupt-" + std::to_string(std::time(nullptr)) + "-" +
                        std::to_string(::getpid()) + "-" + std::to_string(counter++);
    if (renameNoReplace(path, aside))
      return aside;
    if (errno != EEXIST)
      return std::nullopt;
  }
}

/// The store's contents for an update (the caller holds the exclusive
/// lock): a file that is unreadable, not a store, or not the user's own is
/// set aside and the update starts afresh. `problem` says why the update
/// must not go on (the file could not be set aside).
nlohmann::json readForUpdate(const std::string &path, std::string &problem) {
  CacheFile file = read_cache_file(path);
  std::string why = file.why;
  if (file.status == CacheFile::missing)
    return emptyStore();
  if (file.status == CacheFile::read)
    if (auto store = parseStore(file.contents, why))
      return *store;
  if (std::optional<std::string> aside = setAside(path))
    std::cerr << "kiln: the tuning store " << path << " is unreadable (" << why << "); set aside as " << *aside
              << ", starting afresh\n";
  else
    problem = "the tuning store " + path + " is unreadable (" + why + ") and cannot be set aside: " +
              std::strerror(errno);
  return emptyStore();
}

/// Replaces the store's file with `store` through a temporary beside it
/// that no other file had the name of (mkstemp: O_EXCL, mode 0600, never
/// through a link); "" or why it could not.
std::string writeStore(const std::string &path, const nlohmann::json &store) {
  std::string temp = path + ".tmp-XXXXXX";
  int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0)
    return "cannot create a temporary file beside the tuning store " + path + ": " + std::strerror(errno);
  int error = write_all(fd, store.dump(1) + "\n");
  if (::close(fd) != 0 && !error)
    error = errno;
  if (!error && ::rename(temp.c_str(), path.c_str()) == 0)
    return "";
  if (!error)
    error = errno;
  ::unlink(temp.c_str());
  return "cannot write the tuning store " + path + ": " + std::strerror(error);
}

/// Why this process must not update the store at `path`, or "" once its
/// directory proved private and `lock` holds the store's exclusive lock.
std::string prepareUpdate(const std::string &path, std::optional<ExclusiveLock> &lock) {
  if (path.empty())
    return "there is no tuning store (the user has no home directory; set KILN_CACHE_DIR)";
  fs::path directory = fs::path(path).parent_path();
  if (std::string problem = private_directory_problem(directory.empty() ? "." : directory.string());
      !problem.empty())
    return "not writing the tuning store " + path + ": " + problem;
  lock.emplace(path);
  if (!lock->held())
    return "cannot lock the tuning store " + path + ": " + lock->why();
  return "";
}

/// prepareUpdate, then the store as it is under that lock; `problem` says
/// why there is none to update.
nlohmann::json readForUpdateLocked(const std::string &path, std::optional<ExclusiveLock> &lock,
                                   std::string &problem) {
  problem = prepareUpdate(path, lock);
  return problem.empty() ? readForUpdate(path, problem) : nlohmann::json();
}

bool isTime(const nlohmann::json &ms) {
  return ms.is_number() && std::isfinite(ms.get<double>()) && ms.get<double>() >= 0;
}

/// Why a stored entry cannot be used, or "".
std::string entryProblem(const nlohmann::json &j) {
  if (!j.is_object())
    return "it is not an object";
  auto best = j.find("best");
  if (best == j.end() || !best->is_string() || best->get_ref<const std::string &>().empty())
    return "it names no best config";
  auto bestMs = j.find("best_ms");
  if (bestMs == j.end() || !isTime(*bestMs))
    return "its best_ms is not a time (a number of ms, at least 0)";
  auto measured = j.find("measured");
  if (measured == j.end() || !measured->is_object())
    return "it has no measured times";
  for (const auto &[config, ms] : measured->items())
    if (!isTime(ms))
      return "its time of '" + config + "' is not a number of ms, at least 0";
  if (auto updated = j.find("updated"); updated != j.end() && !updated->is_string())
    return "its update time is not text";
  return "";
}

/// The entry `key` of the store at `path`, or nothing (and a warning, once)
/// when it is malformed: one bad entry costs its own problem a tuned config,
/// never the others theirs.
std::optional<TuningStore::Entry> usableEntry(const std::string &path, const std::string &key,
                                              const nlohmann::json &j) {
  if (std::string problem = entryProblem(j); !problem.empty()) {
    warn_once("ignoring the entry '" + key + "' of the tuning store " + path + ": " + problem);
    return std::nullopt;
  }
  TuningStore::Entry e;
  e.best = j["best"].get<std::string>();
  e.best_ms = j["best_ms"].get<double>();
  for (const auto &[config, ms] : j["measured"].items())
    e.measured[config] = ms.get<double>();
  e.updated = j.value("updated", "");
  return e;
}

nlohmann::json jsonOf(const TuningStore::Entry &e) {
  return {{"best", e.best}, {"best_ms", e.best_ms}, {"measured", e.measured}, {"updated", e.updated}};
}

/// Why an entry of an export cannot be imported, or "".
std::string exportedProblem(const nlohmann::json &j,
                            const std::function<std::string(const std::string &)> &configProblem) {
  if (!j.is_object())
    return "it is not an object";
  auto config = j.find("config");
  if (config == j.end() || !config->is_string() || config->get_ref<const std::string &>().empty())
    return "it has no config";
  if (configProblem)
    if (std::string why = configProblem(config->get<std::string>()); !why.empty())
      return "its config '" + config->get<std::string>() + "' is not a config: " + why;
  if (auto ms = j.find("ms"); ms == j.end() || !isTime(*ms))
    return "its ms is not a time (a number of ms, at least 0)";
  return "";
}

} // namespace

TuningStore::TuningStore(std::string path) : path_(std::move(path)) {}

std::string TuningStore::default_path() {
  std::string root = cache_root();
  return root.empty() ? "" : root + "/autotune.json";
}

std::optional<TuningStore::Entry> TuningStore::find(const std::string &key) const {
  const nlohmann::json store = readStore(path_);
  const nlohmann::json &entries = store["entries"];
  auto it = entries.find(key);
  if (it == entries.end())
    return std::nullopt;
  return usableEntry(path_, key, *it);
}

std::map<std::string, TuningStore::Entry> TuningStore::all() const {
  const nlohmann::json store = readStore(path_);
  std::map<std::string, Entry> result;
  for (const auto &[key, entry] : store["entries"].items())
    if (auto usable = usableEntry(path_, key, entry))
      result[key] = std::move(*usable);
  return result;
}

bool TuningStore::record(const std::string &key, const Entry &entry) const {
  std::optional<ExclusiveLock> lock;
  std::string problem;
  nlohmann::json store = readForUpdateLocked(path_, lock, problem);
  if (problem.empty()) {
    std::optional<Entry> stored;
    if (store["entries"].contains(key))
      stored = usableEntry(path_, key, store["entries"][key]);
    Entry merged = stored.value_or(Entry{});
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
    problem = writeStore(path_, store);
  }
  if (!problem.empty()) {
    warn_once(problem);
    return false;
  }
  return true;
}

std::string TuningStore::export_best() const {
  nlohmann::json out = {{"kiln_tuning_export", kFormat}, {"best", nlohmann::json::object()}};
  for (const auto &[key, entry] : all())
    out["best"][key] = {{"config", entry.best}, {"ms", entry.best_ms}};
  return out.dump(1) + "\n";
}

void TuningStore::import_best(const std::string &json,
                              const std::function<std::string(const std::string &)> &config_problem) const {
  nlohmann::json in;
  try {
    in = nlohmann::json::parse(json);
  } catch (const std::exception &e) {
    throw std::runtime_error(std::string("the tuning export does not parse: ") + e.what());
  }
  if (!in.is_object() || !in.contains("kiln_tuning_export") || in["kiln_tuning_export"] != kFormat ||
      !in.contains("best") || !in["best"].is_object())
    throw std::runtime_error("the text is not a Kiln tuning export (version " + std::to_string(kFormat) + ")");
  std::map<std::string, Entry> imported;
  std::string invalid;
  for (const auto &[key, best] : in["best"].items()) {
    if (std::string why = exportedProblem(best, config_problem); !why.empty()) {
      invalid += (invalid.empty() ? "" : "; ") + ("'" + key + "': " + why);
      continue;
    }
    Entry &e = imported[key];
    e.best = best["config"].get<std::string>();
    e.best_ms = best["ms"].get<double>();
    e.measured[e.best] = e.best_ms;
    e.updated = now();
  }
  if (!invalid.empty())
    throw std::runtime_error("the tuning export has invalid entries, so nothing was imported: " + invalid);
  std::optional<ExclusiveLock> lock;
  std::string problem;
  nlohmann::json store = readForUpdateLocked(path_, lock, problem);
  if (problem.empty()) {
    for (const auto &[key, e] : imported)
      store["entries"][key] = jsonOf(e);
    problem = writeStore(path_, store);
  }
  if (!problem.empty())
    throw std::runtime_error(problem);
}

} // namespace kiln
