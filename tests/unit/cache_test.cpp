// The on-disk kernel cache: entries round-trip, corrupt entries are
// detected and rebuilt, concurrent writers lose nothing, and Kernel::compile
// finds what an earlier compile stored under the same key only.
#include <kiln/cache.h>
#include <kiln/kiln.h>
#include <kiln/tuning_store.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

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

/// Sets KILN_CACHE_DIR for the scope of a test.
class CacheDirScope {
public:
  explicit CacheDirScope(const std::string &dir) {
    if (const char *old = std::getenv("KILN_CACHE_DIR"))
      old_ = old;
    setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  }
  ~CacheDirScope() {
    if (old_.empty())
      unsetenv("KILN_CACHE_DIR");
    else
      setenv("KILN_CACHE_DIR", old_.c_str(), 1);
  }

private:
  std::string old_;
};

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
  testing::internal::CaptureStderr();
  EXPECT_FALSE(store.load(key).has_value());
  std::string said = testing::internal::GetCapturedStderr();
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
  testing::internal::CaptureStderr();
  EXPECT_FALSE(store.load(a).has_value());
  EXPECT_FALSE(store.load(b).has_value());
  std::string said = testing::internal::GetCapturedStderr();
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
  testing::internal::CaptureStderr();
  EXPECT_FALSE(store.load(b).has_value());
  EXPECT_NE(testing::internal::GetCapturedStderr().find("names another key"), std::string::npos);
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
  testing::internal::CaptureStderr();
  CompiledKernel again = jit(scale_kernel, "cache_scale").compile({{"BLOCK", 128}}, {}, "sm_90a");
  EXPECT_NE(testing::internal::GetCapturedStderr().find("ignoring corrupt cache entry"), std::string::npos);
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
  testing::internal::CaptureStderr();
  ASSERT_TRUE(store.record("y", {"A=1", 2.0, {{"A=1", 2.0}}, ""}));
  std::string said = testing::internal::GetCapturedStderr();
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
