// The on-disk kernel cache: entries round-trip, corrupt entries are
// detected and rebuilt, concurrent writers lose nothing, and Kernel::compile
// finds what an earlier compile stored under the same key only. The stores'
// trust rules: links planted at predictable names are never followed,
// directories others can write are refused, files of other users ignored,
// malformed tuning entries skipped one by one.
#include "tests/common/CacheDirScope.h"
#include <kiln/cache.h>
#include <kiln/kiln.h>
#include <kiln/tuning_store.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

/// A fresh directory under the system's temporary folder, removed after.
class TempDir {
public:
  TempDir() {
    std::random_device random;
    path_ = fs::temp_directory_path() / ("kiln-cache-test-" + std::to_string(getpid()) + "-" + std::to_string(random()));
    fs::create_directories(path_);
    fs::permissions(path_, fs::perms::owner_all); // private whatever the umask: the stores refuse others' access
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};

BlobStore::Entry entryWith(const std::string &metadata, const std::string &payload) {
  BlobStore::Entry entry;
  entry.metadata = metadata;
  entry.files["kernel.ptx"] = std::vector<char>(payload.begin(), payload.end());
  entry.files["kernel.cubin"] = std::vector<char>(payload.rbegin(), payload.rend());
  return entry;
}

std::string keyOf(const std::string &text) { return sha256_hex(text); }

/// Waits for forked children; each must exit 0.
void expectAllSucceeded(const std::vector<pid_t> &children) {
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

/// Every entry directory of a store (skipping temporaries).
std::vector<fs::path> entries(const fs::path &root) {
  std::vector<fs::path> found;
  if (!fs::exists(root))
    return found;
  for (const auto &shard : fs::directory_iterator(root))
    if (shard.is_directory())
      for (const auto &entry : fs::directory_iterator(shard))
        found.push_back(entry.path());
  return found;
}

std::string contentsOf(const fs::path &file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The files a tuning store at `store` was set aside as.
std::vector<fs::path> setAside(const fs::path &store) {
  std::vector<fs::path> found;
  for (const auto &item : fs::directory_iterator(store.parent_path()))
    if (item.path().filename().string().rfind(store.filename().string() + ".corrupt-", 0) == 0)
      found.push_back(item.path());
  return found;
}

size_t occurrences(const std::string &text, const std::string &part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

/// Sets an environment variable (or unsets it, for nullptr) for the scope
/// of a test.
class EnvScope {
public:
  EnvScope(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = std::string(old);
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvScope() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

private:
  std::string name_;
  std::optional<std::string> old_;
};

using kiln::testing::CacheDirScope;

} // namespace

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(BlobStore, EntriesRoundTrip) {
  TempDir dir;
  BlobStore store(dir.str());
  std::string key = keyOf("one");
  EXPECT_FALSE(store.load(key).has_value());
  ASSERT_TRUE(store.store(key, entryWith("{\"registers\": 32}", "ptx text")));
  auto loaded = store.load(key);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->metadata, "{\"registers\": 32}");
  EXPECT_EQ(std::string(loaded->files["kernel.ptx"].begin(), loaded->files["kernel.ptx"].end()), "ptx text");
  EXPECT_EQ(std::string(loaded->files["kernel.cubin"].begin(), loaded->files["kernel.cubin"].end()), "txet xtp");
}

TEST(BlobStore, CorruptFilesAreSetAsideAndRebuilt) {
  TempDir dir;
  BlobStore store(dir.str());
  std::string key = keyOf("two");
  ASSERT_TRUE(store.store(key, entryWith("{}", "original bytes")));
  ASSERT_EQ(entries(dir.path()).size(), 1u);
  fs::path cubin = entries(dir.path())[0] / "kernel.cubin";
  {
    std::fstream file(cubin, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(3);
    file.put('X'); // one flipped byte
  }
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(store.load(key).has_value());
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("ignoring corrupt cache entry"), std::string::npos) << said;
  EXPECT_NE(said.find("checksum mismatch in kernel.cubin"), std::string::npos) << said;
  EXPECT_TRUE(entries(dir.path()).empty()) << "the corrupt entry stays in place";
  ASSERT_TRUE(store.store(key, entryWith("{}", "rebuilt")));
  ASSERT_TRUE(store.load(key).has_value());
}

TEST(BlobStore, UnreadableManifestsAndTruncatedFilesAreRejected) {
  TempDir dir;
  BlobStore store(dir.str());
  std::string a = keyOf("manifest"), b = keyOf("truncated");
  ASSERT_TRUE(store.store(a, entryWith("{}", "aaaa")));
  ASSERT_TRUE(store.store(b, entryWith("{}", "bbbbbbbb")));
  for (const fs::path &entry : entries(dir.path())) {
    if (entry.filename() == a)
      std::ofstream(entry / "meta.json") << "{\"key\": \"" << a << "\", \"files\": ["; // cut short
    else
      fs::resize_file(entry / "kernel.ptx", 2);
  }
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(store.load(a).has_value());
  EXPECT_FALSE(store.load(b).has_value());
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("unreadable manifest"), std::string::npos) << said;
  EXPECT_NE(said.find("checksum mismatch in kernel.ptx"), std::string::npos) << said;
}

TEST(BlobStore, AnEntryUnderAnotherKeyIsRejected) {
  TempDir dir;
  BlobStore store(dir.str());
  std::string a = keyOf("a"), b = keyOf("b");
  ASSERT_TRUE(store.store(a, entryWith("{}", "payload")));
  fs::path from = entries(dir.path())[0];
  fs::path to = dir.path() / b.substr(0, 2) / b;
  fs::create_directories(to.parent_path());
  fs::rename(from, to); // a file system mix-up: a's entry where b's belongs
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(store.load(b).has_value());
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("names another key"), std::string::npos);
}

TEST(BlobStore, ConcurrentWritersLoseNothing) {
  TempDir dir;
  constexpr int kProcesses = 8, kKeys = 40;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      BlobStore store(dir.str());
      bool ok = true;
      // Every process writes every shared key and some of its own.
      for (int k = 0; k < kKeys; ++k) {
        ok = store.store(keyOf("shared" + std::to_string(k)), entryWith("{}", "shared " + std::to_string(k))) && ok;
        ok = store.store(keyOf("own" + std::to_string(p) + "-" + std::to_string(k)),
                         entryWith("{}", "own " + std::to_string(p))) && ok;
        ok = store.load(keyOf("shared" + std::to_string(k))).has_value() && ok;
      }
      _exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  expectAllSucceeded(children);
  BlobStore store(dir.str());
  EXPECT_EQ(entries(dir.path()).size(), size_t(kKeys + kProcesses * kKeys)) << "lost or stray entries";
  for (int k = 0; k < kKeys; ++k) {
    auto shared = store.load(keyOf("shared" + std::to_string(k)));
    ASSERT_TRUE(shared.has_value());
    std::string expected = "shared " + std::to_string(k);
    EXPECT_EQ(std::string(shared->files["kernel.ptx"].begin(), shared->files["kernel.ptx"].end()), expected);
    for (int p = 0; p < kProcesses; ++p)
      EXPECT_TRUE(store.load(keyOf("own" + std::to_string(p) + "-" + std::to_string(k))).has_value());
  }
  for (const auto &item : fs::recursive_directory_iterator(dir.path()))
    EXPECT_EQ(item.path().filename().string().rfind(".tmp-", 0), std::string::npos)
        << "a temporary was left behind: " << item.path();
}

namespace {
void scale_kernel(const Config &cfg, ConstPtr<f32> x, Ptr<f32> y, Int n) {
  const int64_t B = cfg["BLOCK"];
  Tensor o = program_id(0) * B + arange(0, B);
  store(y + o, load(x + o, o < n) * 3.0, o < n);
}
} // namespace

TEST(KernelCache, ACompileIsStoredAndFoundUnderItsKeyOnly) {
  TempDir dir;
  CacheDirScope scope(dir.str());
  Kernel kernel = jit(scale_kernel, "cache_scale");
  Specialization spec{{{true, false}, {true, false}, {false, false}}};
  CompiledKernel first = kernel.compile({{"BLOCK", 256}}, spec, "sm_90a");
  EXPECT_NE(first.ptx.find(".entry cache_scale"), std::string::npos);
  fs::path store = dir.path() / "kernels";
  ASSERT_EQ(entries(store).size(), 1u);

  // Mark the stored entry so that a hit shows: rewrite its metadata.
  fs::path entry = entries(store)[0];
  std::string key = entry.filename().string();
  BlobStore blobs(store.string());
  auto stored = blobs.load(key);
  ASSERT_TRUE(stored.has_value());
  nlohmann::json meta = nlohmann::json::parse(stored->metadata);
  meta["registers"] = 12345;
  stored->metadata = meta.dump();
  fs::remove_all(entry);
  ASSERT_TRUE(blobs.store(key, *stored));

  // A new Kernel (as in another process) finds it on disk.
  Kernel fresh = jit(scale_kernel, "cache_scale");
  EXPECT_EQ(fresh.compile({{"BLOCK", 256}}, spec, "sm_90a").registers, 12345) << "the second compile missed the cache";
  // Another config, specialization or target is another key.
  EXPECT_NE(fresh.compile({{"BLOCK", 512}}, spec, "sm_90a").registers, 12345);
  EXPECT_NE(fresh.compile({{"BLOCK", 256}}, Specialization{}, "sm_90a").registers, 12345);
  EXPECT_NE(fresh.compile({{"BLOCK", 256}}, spec, "sm_80").registers, 12345);
  EXPECT_EQ(entries(store).size(), 4u);
}

TEST(KernelCache, AKernelRemembersWhatItCompiled) {
  // The same Kernel compiles a config once per process: again, it neither
  // traces nor reads the disk (here emptied) and returns the same code.
  TempDir dir;
  CacheDirScope scope(dir.str());
  Kernel kernel = jit(scale_kernel, "cache_scale");
  CompiledKernel first = kernel.compile({{"BLOCK", 64}}, {}, "sm_90a");
  fs::remove_all(dir.path() / "kernels");
  CompiledKernel again = kernel.compile({{"BLOCK", 64}}, {}, "sm_90a");
  EXPECT_EQ(again.ptx, first.ptx);
  EXPECT_FALSE(fs::exists(dir.path() / "kernels")) << "compiled afresh";
}

TEST(KernelCache, ACorruptEntryIsRecompiled) {
  TempDir dir;
  CacheDirScope scope(dir.str());
  Kernel kernel = jit(scale_kernel, "cache_scale");
  CompiledKernel first = kernel.compile({{"BLOCK", 128}}, {}, "sm_90a");
  fs::path entry = entries(dir.path() / "kernels").at(0);
  std::ofstream(entry / "kernel.ptx", std::ios::trunc) << "garbage";
  ::testing::internal::CaptureStderr();
  CompiledKernel again = jit(scale_kernel, "cache_scale").compile({{"BLOCK", 128}}, {}, "sm_90a");
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("ignoring corrupt cache entry"), std::string::npos);
  EXPECT_EQ(again.ptx, first.ptx);
  EXPECT_EQ(again.cubin, first.cubin);
  ASSERT_TRUE(BlobStore((dir.path() / "kernels").string()).load(entry.filename().string()).has_value())
      << "the rebuilt entry was not stored";
}

TEST(TuningStore, RecordsMergeAndKeepTheFastest) {
  TempDir dir;
  TuningStore store((dir.path() / "autotune.json").string());
  EXPECT_FALSE(store.find("softmax|rows=16384").has_value());
  ASSERT_TRUE(store.record("softmax|rows=16384", {"BLOCK=1024", 0.5, {{"BLOCK=1024", 0.5}, {"BLOCK=512", 0.7}}, ""}));
  // A later run measuring other configs adds to them; the best is the
  // fastest of everything measured.
  ASSERT_TRUE(store.record("softmax|rows=16384", {"BLOCK=2048", 0.6, {{"BLOCK=2048", 0.6}, {"BLOCK=4096", 0.4}}, ""}));
  auto entry = store.find("softmax|rows=16384");
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->best, "BLOCK=4096");
  EXPECT_DOUBLE_EQ(entry->best_ms, 0.4);
  EXPECT_EQ(entry->measured.size(), 4u);
  EXPECT_FALSE(entry->updated.empty());
}

TEST(TuningStore, ConcurrentProcessesLoseNothing) {
  TempDir dir;
  std::string path = (dir.path() / "autotune.json").string();
  constexpr int kProcesses = 8, kKeys = 25;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      TuningStore store(path);
      bool ok = true;
      for (int k = 0; k < kKeys; ++k) {
        std::string config = "P=" + std::to_string(p);
        ok = store.record("own" + std::to_string(p) + "-" + std::to_string(k), {config, 1.0 + k, {{config, 1.0 + k}}, ""}) && ok;
        ok = store.record("shared", {config, 10.0 - p * 0.5, {{config, 10.0 - p * 0.5}}, ""}) && ok;
      }
      _exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  expectAllSucceeded(children);
  TuningStore store(path);
  auto all = store.all();
  EXPECT_EQ(all.size(), size_t(kProcesses * kKeys + 1)) << "entries were lost";
  ASSERT_TRUE(all.count("shared"));
  EXPECT_EQ(all["shared"].measured.size(), size_t(kProcesses)) << "a process's timing was lost";
  EXPECT_EQ(all["shared"].best, "P=" + std::to_string(kProcesses - 1));
}

TEST(TuningStore, ACorruptFileIsSetAsideAndRebuilt) {
  TempDir dir;
  std::string path = (dir.path() / "autotune.json").string();
  std::ofstream(path) << "{\"version\": 1, \"entries\": {\"x\": ";
  TuningStore store(path);
  EXPECT_FALSE(store.find("x").has_value()) << "a reader trusted a corrupt file";
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(store.record("y", {"A=1", 2.0, {{"A=1", 2.0}}, ""}));
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("is unreadable"), std::string::npos) << said;
  EXPECT_NE(said.find("set aside"), std::string::npos) << said;
  EXPECT_EQ(store.find("y")->best, "A=1");
  int asides = 0;
  for (const auto &item : fs::directory_iterator(dir.path()))
    asides += item.path().filename().string().find("autotune.json.corrupt-") == 0;
  EXPECT_EQ(asides, 1);
}

TEST(TuningStore, ExportAndImportBestConfigs) {
  TempDir dir;
  TuningStore from((dir.path() / "a.json").string()), to((dir.path() / "b.json").string());
  from.record("k1", {"B=1", 1.0, {{"B=1", 1.0}, {"B=2", 3.0}}, ""});
  from.record("k2", {"B=8", 2.0, {{"B=8", 2.0}}, ""});
  std::string exported = from.export_best();
  to.import_best(exported);
  EXPECT_EQ(to.find("k1")->best, "B=1");
  EXPECT_EQ(to.find("k2")->best, "B=8");
  EXPECT_EQ(to.find("k1")->measured.size(), 1u) << "an export carries best configs only";
  EXPECT_THROW(to.import_best("{\"best\": 1}"), std::runtime_error);
  EXPECT_THROW(to.import_best("not json"), std::runtime_error);
}

TEST(TuningStore, MalformedEntriesAreSkippedAndTheOthersStillLoad) {
  TempDir dir;
  std::string path = (dir.path() / "autotune.json").string();
  std::ofstream(path) << R"({"version": 1, "entries": {
    "good": {"best": "A=1", "best_ms": 0.5, "measured": {"A=1": 0.5, "A=2": 0.9}, "updated": "2026-01-01T00:00:00Z"},
    "text_ms": {"best": "A=1", "best_ms": "fast", "measured": {"A=1": 0.5}},
    "negative_ms": {"best": "A=1", "best_ms": -1, "measured": {"A=1": 0.5}},
    "no_best": {"best_ms": 0.5, "measured": {"A=1": 0.5}},
    "empty_best": {"best": "", "best_ms": 0.5, "measured": {}},
    "text_timing": {"best": "A=1", "best_ms": 0.5, "measured": {"A=1": "slow"}},
    "not_an_object": 3}})";
  TuningStore store(path);
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(store.find("good").has_value());
  EXPECT_EQ(store.find("good")->best, "A=1");
  for (const char *key : {"text_ms", "negative_ms", "no_best", "empty_best", "text_timing", "not_an_object"})
    EXPECT_FALSE(store.find(key).has_value()) << key;
  EXPECT_FALSE(store.find("text_ms").has_value());
  auto all = store.all();
  std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all.count("good"), 1u);
  for (const char *key : {"text_ms", "negative_ms", "no_best", "empty_best", "text_timing", "not_an_object"})
    EXPECT_EQ(occurrences(said, std::string("ignoring the entry '") + key + "'"), 1u) << key << " in:\n" << said;
  EXPECT_NE(said.find("best_ms is not a time"), std::string::npos) << said;
  // An update replaces the malformed entry it is for, and keeps the rest:
  // nothing is set aside.
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(store.record("text_ms", {"A=3", 0.25, {{"A=3", 0.25}}, ""}));
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(store.find("text_ms")->best, "A=3");
  EXPECT_EQ(store.find("good")->measured.size(), 2u);
  EXPECT_TRUE(setAside(path).empty());
  EXPECT_NE(store.export_best().find("\"good\""), std::string::npos);
  EXPECT_EQ(store.export_best().find("negative_ms"), std::string::npos) << "an export carried a malformed entry";
}

TEST(TuningStore, TwoCorruptStoresSetAsideKeepBothCopies) {
  // Set aside within the same second: each keeps a name of its own.
  TempDir dir;
  fs::path path = dir.path() / "autotune.json";
  TuningStore store(path.string());
  ::testing::internal::CaptureStderr();
  std::ofstream(path) << "first corrupt store";
  ASSERT_TRUE(store.record("a", {"A=1", 1.0, {{"A=1", 1.0}}, ""}));
  std::ofstream(path, std::ios::trunc) << "second corrupt store";
  ASSERT_TRUE(store.record("b", {"B=1", 1.0, {{"B=1", 1.0}}, ""}));
  ::testing::internal::GetCapturedStderr();
  std::vector<fs::path> asides = setAside(path);
  ASSERT_EQ(asides.size(), 2u);
  std::set<std::string> kept{contentsOf(asides[0]), contentsOf(asides[1])};
  EXPECT_EQ(kept, (std::set<std::string>{"first corrupt store", "second corrupt store"}));
  EXPECT_TRUE(store.find("b").has_value());
}

TEST(TuningStore, ALinkAtTheOldTemporaryNameLeavesItsTargetAlone) {
  // The temporary used to be "<store>.tmp-<pid>", opened through whatever
  // stood there: a link planted at it had its target overwritten.
  TempDir dir;
  fs::path path = dir.path() / "autotune.json", victim = dir.path() / "victim";
  std::ofstream(victim) << "precious";
  fs::path planted = path.string() + ".tmp-" + std::to_string(getpid());
  fs::create_symlink(victim, planted);
  TuningStore store(path.string());
  ASSERT_TRUE(store.record("k", {"A=1", 1.0, {{"A=1", 1.0}}, ""}));
  EXPECT_EQ(contentsOf(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(planted));
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(store.find("k")->best, "A=1");
  for (const auto &item : fs::directory_iterator(dir.path()))
    EXPECT_TRUE(item.path() == planted || item.path().filename().string().find(".tmp-") == std::string::npos)
        << "a temporary was left behind: " << item.path();
}

TEST(TuningStore, ALinkAtTheLockNameIsNotFollowed) {
  TempDir dir;
  fs::path path = dir.path() / "autotune.json", target = dir.path() / "made-through-the-link";
  fs::create_symlink(target, path.string() + ".lock");
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(TuningStore(path.string()).record("k", {"A=1", 1.0, {{"A=1", 1.0}}, ""}));
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("cannot lock the tuning store"), std::string::npos) << said;
  EXPECT_FALSE(fs::exists(fs::symlink_status(target))) << "the lock's link was followed";
}

TEST(TuningStore, ALinkedStoreIsNeitherReadNorWrittenThrough) {
  TempDir dir;
  fs::path path = dir.path() / "autotune.json", victim = dir.path() / "elsewhere.json";
  const std::string planted =
      R"({"version": 1, "entries": {"k": {"best": "A=9", "best_ms": 0.1, "measured": {"A=9": 0.1}}}})";
  std::ofstream(victim) << planted;
  fs::create_symlink(victim, path);
  TuningStore store(path.string());
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(store.find("k").has_value()) << "read through a link";
  ASSERT_TRUE(store.record("mine", {"A=1", 1.0, {{"A=1", 1.0}}, ""}));
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("is a symbolic link"), std::string::npos) << said;
  EXPECT_EQ(contentsOf(victim), planted);
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(store.find("mine")->best, "A=1");
  EXPECT_FALSE(store.find("k").has_value());
}

TEST(TuningStore, AnotherUsersStoreIsIgnored) {
  if (geteuid() != 0)
    GTEST_SKIP() << "giving a file to another user needs root";
  TempDir dir;
  fs::path path = dir.path() / "autotune.json";
  TuningStore store(path.string());
  ASSERT_TRUE(store.record("k", {"A=1", 1.0, {{"A=1", 1.0}}, ""}));
  if (chown(path.c_str(), 65534, 65534) != 0)
    GTEST_SKIP() << "chown is not allowed here";
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(store.find("k").has_value());
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("belongs to user 65534"), std::string::npos) << said;
}

TEST(CacheDirectory, ADirectoryOthersCanWriteIsRefused) {
  TempDir dir;
  fs::path shared = dir.path() / "shared";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms::all); // 0777, as /tmp/kiln-cache could be
  EXPECT_NE(private_directory_problem(shared.string()).find("writable by other users"), std::string::npos);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(TuningStore((shared / "autotune.json").string()).record("k", {"A=1", 1.0, {{"A=1", 1.0}}, ""}));
  EXPECT_FALSE(BlobStore(shared.string()).store(keyOf("k"), entryWith("{}", "payload")));
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("writable by other users"), std::string::npos) << said;
  EXPECT_TRUE(fs::is_empty(shared)) << "wrote into a directory others can write";
  // Made private, it is used.
  fs::permissions(shared, fs::perms::owner_all);
  EXPECT_TRUE(BlobStore(shared.string()).store(keyOf("k"), entryWith("{}", "payload")));
}

TEST(CacheDirectory, ALinkedDirectoryIsRefusedAndMissingOnesAreMadePrivate) {
  TempDir dir;
  fs::path real = dir.path() / "real", link = dir.path() / "link";
  fs::create_directories(real);
  fs::permissions(real, fs::perms::owner_all);
  fs::create_directory_symlink(real, link);
  EXPECT_NE(private_directory_problem(link.string()).find("is a symbolic link"), std::string::npos);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(BlobStore(link.string()).store(keyOf("k"), entryWith("{}", "payload")));
  ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(fs::is_empty(real));

  fs::path made = dir.path() / "a" / "b";
  EXPECT_EQ(private_directory_problem(made.string() + "/"), "");
  for (const fs::path &each : {dir.path() / "a", made})
    EXPECT_EQ(fs::status(each).permissions() & fs::perms::all, fs::perms::owner_all) << each;
}

TEST(CacheRoot, WithoutEnvironmentItIsTheUsersOwnHome) {
  EnvScope cache("KILN_CACHE_DIR", nullptr), xdg("XDG_CACHE_HOME", nullptr), home("HOME", nullptr);
  const passwd *user = getpwuid(geteuid());
  if (!user || !user->pw_dir || !*user->pw_dir)
    EXPECT_EQ(cache_root(), "") << "no home: caching is off";
  else
    EXPECT_EQ(cache_root(), std::string(user->pw_dir) + "/.cache/kiln");
  EXPECT_EQ(cache_root().rfind("/tmp", 0), std::string::npos);
}

TEST(BlobStore, ALinkAtAnEntrysPlaceIsNotFollowed) {
  TempDir dir;
  fs::path root = dir.path() / "kernels", victim = dir.path() / "victim";
  fs::create_directories(victim);
  std::ofstream(victim / "precious") << "precious";
  std::string key = keyOf("linked");
  fs::create_directories(root / key.substr(0, 2));
  fs::permissions(root, fs::perms::owner_all);
  fs::permissions(root / key.substr(0, 2), fs::perms::owner_all);
  fs::create_directory_symlink(victim, root / key.substr(0, 2) / key);
  BlobStore store(root.string());
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(store.load(key).has_value());
  store.store(key, entryWith("{}", "payload"));
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("is not a directory of this user's"), std::string::npos) << said;
  std::vector<std::string> inVictim;
  for (const auto &item : fs::directory_iterator(victim))
    inVictim.push_back(item.path().filename().string());
  EXPECT_EQ(inVictim, std::vector<std::string>{"precious"}) << "written through the link";
  EXPECT_EQ(contentsOf(victim / "precious"), "precious");
}

TEST(BlobStore, KeysAndFileNamesStayInsideTheStore) {
  TempDir dir;
  BlobStore store((dir.path() / "kernels").string());
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(store.store("../escape", entryWith("{}", "payload")));
  BlobStore::Entry outside;
  outside.files["../outside"] = {'x'};
  EXPECT_FALSE(store.store(keyOf("outside"), outside));
  ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(store.load("../escape").has_value());
  EXPECT_FALSE(fs::exists(dir.path() / "escape"));
  EXPECT_FALSE(fs::exists(dir.path() / "kernels" / "outside"));
}

TEST(BlobStore, AnotherUsersEntryIsIgnored) {
  if (geteuid() != 0)
    GTEST_SKIP() << "giving a file to another user needs root";
  TempDir dir;
  BlobStore store(dir.str());
  std::string key = keyOf("theirs");
  ASSERT_TRUE(store.store(key, entryWith("{}", "payload")));
  fs::path kernel = entries(dir.path()).at(0) / "kernel.ptx";
  if (chown(kernel.c_str(), 65534, 65534) != 0)
    GTEST_SKIP() << "chown is not allowed here";
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(store.load(key).has_value());
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("belongs to user 65534"), std::string::npos) << said;
}
