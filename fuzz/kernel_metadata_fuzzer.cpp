// Fuzzes the compiled-kernel metadata the kernel cache stores (the JSON
// dsl/lib/Launch.cpp reads back: name, arch, warps, shared memory, ptxas's
// counts, tensor maps). That reader is internal to the launch path, so the
// harness goes through it: a small kernel is compiled once (no GPU needed)
// into a cache of its own, then for each input its entry is rewritten,
// checksums and all, with the input as its metadata, and a new Kernel (as
// another process would) compiles the same config, reading the entry back.
//
// Input: the metadata text; what is not JSON is skipped (the reader's first
// step, nlohmann's parser, is not Kiln's; and BlobStore::store, which
// writes the entry here, takes only UTF-8 metadata). A crash is a
// sanitizer report or an exception other than kiln::Error out of the
// compile (metadata of another shape is recompiled, never thrown).

#include <kiln/cache.h>
#include <kiln/kiln.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace kiln;

namespace {

void scale(const Config &cfg, ConstPtr<f32> x, Ptr<f32> y, Int n) {
  const int64_t B = cfg["BLOCK"];
  Tensor o = program_id(0) * B + arange(0, B);
  store(y + o, load(x + o, o < n) * 3.0, o < n);
}

const Config kConfig{{"BLOCK", 128}};
const char *const kArch = "sm_80";

fs::path root;
std::string key;
BlobStore::Entry compiled; ///< the entry as the compiler stored it

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  root = fs::temp_directory_path() / ("kiln-fuzz-kernel-metadata-" + std::to_string(getpid()));
  fs::create_directories(root);
  setenv("KILN_CACHE_DIR", root.c_str(), 1);
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(root, ignored);
  });
  jit(scale, "fuzz_scale").compile(kConfig, {}, kArch);
  for (const auto &item : fs::recursive_directory_iterator(root / "kernels"))
    if (fs::exists(item.path() / "meta.json"))
      key = item.path().filename().string();
  auto entry = BlobStore((root / "kernels").string()).load(key);
  if (!entry) {
    std::fprintf(stderr, "kernel metadata fuzzer: the compile stored no cache entry under %s\n", root.c_str());
    std::abort();
  }
  compiled = *entry;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string metadata(reinterpret_cast<const char *>(data), size);
  // (nlohmann's parser stops at a NUL: the bytes after one are not JSON.)
  if (metadata.find('\0') != std::string::npos || !nlohmann::json::accept(metadata))
    return -1;
  BlobStore store((root / "kernels").string());
  fs::remove_all(root / "kernels" / key.substr(0, 2) / key);
  BlobStore::Entry entry = compiled;
  entry.metadata = metadata;
  store.store(key, entry);
  try {
    CompiledKernel kernel = jit(scale, "fuzz_scale").compile(kConfig, {}, kArch);
    (void)kernel;
  } catch (const Error &) {
  } catch (const std::exception &e) {
    std::fprintf(stderr, "compile threw another exception than kiln::Error: %s\n", e.what());
    std::abort();
  }
  return 0;
}
