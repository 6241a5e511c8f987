//===- BuildId.cpp - which build of Kiln's compiler is running ------------===//

#include <kiln/compiler.h>
#include <kiln/version.h>

#include <cstring>
#include <link.h>
#include <string>

namespace kiln {

namespace {

struct Search {
  const void *address; ///< an address inside the library we look for
  std::string id;
};

int visit(dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<Search *>(data);
  auto address = reinterpret_cast<uintptr_t>(search->address);
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto &ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && address >= start && address < start + ph.p_memsz)
      mine = true;
  }
  if (!mine)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE)
      continue;
    const char *note = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
    const char *end = note + ph.p_memsz;
    while (note + sizeof(ElfW(Nhdr)) <= end) {
      auto *header = reinterpret_cast<const ElfW(Nhdr) *>(note);
      const char *name = note + sizeof(ElfW(Nhdr));
      const char *desc = name + ((header->n_namesz + 3) & ~3u);
      if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static const char *hex = "0123456789abcdef";
        for (unsigned j = 0; j < header->n_descsz; ++j) {
          unsigned char byte = static_cast<unsigned char>(desc[j]);
          search->id.push_back(hex[byte >> 4]);
          search->id.push_back(hex[byte & 15]);
        }
        return 1;
      }
      note = desc + ((header->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

} // namespace

const std::string &build_id() {
  static const std::string id = [] {
    Search search{reinterpret_cast<const void *>(&build_id), {}};
    dl_iterate_phdr(visit, &search);
    return search.id.empty() ? std::string(version()) : search.id;
  }();
  return id;
}

} // namespace kiln
