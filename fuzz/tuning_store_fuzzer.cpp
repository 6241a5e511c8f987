// Fuzzes the tuning store (cache/TuningStore.cpp) on a store file whose
// bytes come from the input: find, all, export_best (and importing that
// export into a second store), record, then import_best of a text that also
// comes from the input.
//
// Input: the store file's bytes, then optionally a NUL byte and the text
// to import. A crash is a sanitizer report, or an exception out of find,
// all, record or export_best (a store that does not read is set aside, not
// thrown), or one out of import_best other than std::runtime_error, or an
// export that does not import, or a record that is not found afterwards.

#include <kiln/tuning_store.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

fs::path folder;

[[noreturn]] void fail(const std::string &why) {
  std::fprintf(stderr, "tuning store: %s\n", why.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  folder = fs::temp_directory_path() / ("kiln-fuzz-tuning-store-" + std::to_string(getpid()));
  fs::create_directories(folder);
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(folder, ignored);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string input(reinterpret_cast<const char *>(data), size);
  const size_t split = input.find('\0');
  const std::string file = input.substr(0, split), imported = split == std::string::npos ? "" : input.substr(split + 1);

  // A fresh folder each time: a store set aside leaves its ".corrupt-" file.
  fs::remove_all(folder);
  fs::create_directories(folder);
  const std::string path = (folder / "autotune.json").string();
  std::ofstream(path, std::ios::binary) << file;

  kiln::TuningStore store(path), copy((folder / "copy.json").string());
  try {
    for (const auto &[key, entry] : store.all()) {
      auto found = store.find(key);
      if (!found || found->best != entry.best)
        fail("all() lists '" + key + "', find() does not return it");
    }
    (void)store.find("softmax|f32|4096x4096");
    const std::string exported = store.export_best();
    try {
      copy.import_best(exported);
    } catch (const std::exception &e) {
      fail(std::string("its own export does not import: ") + e.what());
    }
    if (copy.all().size() != store.all().size())
      fail("the export's import holds another number of entries");

    kiln::TuningStore::Entry entry;
    entry.best = "BLOCK=128";
    entry.best_ms = 0.5;
    entry.measured = {{"BLOCK=128", 0.5}, {"BLOCK=256", 0.75}};
    if (store.record("fuzz|key", entry) && !store.find("fuzz|key"))
      fail("a recorded entry is not found");
  } catch (const std::exception &e) {
    fail(std::string("an exception out of the store: ") + e.what());
  }
  try {
    store.import_best(imported);
  } catch (const std::runtime_error &) {
  }
  (void)store.all();
  return 0;
}
