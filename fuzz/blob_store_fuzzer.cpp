// Fuzzes the kernel cache's reader (BlobStore::load, cache/BlobStore.cpp)
// on an entry folder whose meta.json and files come from the input: the
// manifest it parses, the checksums it checks, the entries it sets aside.
//
// Input: a flags byte (bit 0: the manifest's "key" is made the entry's
// own, bit 1: its "files" digests are made those of the files written, so
// that the input reaches past those checks when it is JSON); meta.json's
// bytes up to a NUL; then up to four files, each a name and contents, each
// ended by a NUL. Names are kept to a plain file name inside the entry.
// A crash is a sanitizer report, an exception out of load (a bad entry is
// set aside, never thrown), or a loaded entry whose files do not match
// what is on disk.

#include <kiln/cache.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

fs::path root;
const std::string kKey = "5f3c0e1a9b7d4c2e8f6a1b3d5c7e9f0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e";

[[noreturn]] void fail(const std::string &why) {
  std::fprintf(stderr, "kernel cache: %s\n", why.c_str());
  std::abort();
}

/// The next part of the input, up to a NUL (or its end).
std::string part(const std::string &input, size_t &at) {
  size_t end = input.find('\0', at);
  std::string s = input.substr(at, end == std::string::npos ? std::string::npos : end - at);
  at = end == std::string::npos ? input.size() : end + 1;
  return s;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  root = fs::temp_directory_path() / ("kiln-fuzz-blob-store-" + std::to_string(getpid()));
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(root, ignored);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return -1;
  const uint8_t flags = data[0];
  const std::string input(reinterpret_cast<const char *>(data) + 1, size - 1);
  size_t at = 0;
  std::string meta = part(input, at);
  std::map<std::string, std::string> files;
  while (at < input.size() && files.size() < 4) {
    std::string name = part(input, at), contents = part(input, at);
    std::string plain;
    for (char c : name)
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')
        plain += c;
    if (!plain.empty() && plain != "." && plain != ".." && plain != "meta.json")
      files[plain] = contents;
  }

  if (flags & 3) {
    try {
      nlohmann::json manifest = nlohmann::json::parse(meta);
      if (manifest.is_object()) {
        if (flags & 1)
          manifest["key"] = kKey;
        if ((flags & 2) && manifest.contains("files") && manifest["files"].is_object())
          for (auto &[name, digest] : manifest["files"].items())
            if (auto it = files.find(name); it != files.end())
              digest = kiln::sha256_hex(it->second);
        meta = manifest.dump();
      }
    } catch (const nlohmann::json::exception &) {
    }
  }

  fs::remove_all(root);
  const fs::path entry = root / kKey.substr(0, 2) / kKey;
  fs::create_directories(entry);
  std::ofstream(entry / "meta.json", std::ios::binary) << meta;
  for (const auto &[name, contents] : files)
    std::ofstream(entry / name, std::ios::binary) << contents;

  std::optional<kiln::BlobStore::Entry> loaded;
  try {
    loaded = kiln::BlobStore(root.string()).load(kKey);
  } catch (const std::exception &e) {
    fail(std::string("load threw: ") + e.what());
  }
  if (loaded)
    for (const auto &[name, bytes] : loaded->files)
      if (auto it = files.find(name); it != files.end() && std::string(bytes.begin(), bytes.end()) != it->second)
        fail("the loaded entry's file '" + name + "' is not the one on disk");
  return 0;
}
