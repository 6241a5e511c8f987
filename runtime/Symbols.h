// Binding the entry points of a library loaded with dlopen (the CUDA
// driver, the HIP runtime). Internal to runtime/.
#pragma once

#include <dlfcn.h>

#include <string>

namespace kiln {

/// Points `slot` at `library`'s symbol `name`; when it is missing, says so
/// in `error` ("<library> lacks <name>") and returns false.
template <class F> bool bind_symbol(void *library, const char *name, F &slot, std::string &error, const char *what) {
  void *symbol = dlsym(library, name);
  if (!symbol) {
    error = std::string(what) + " lacks " + name;
    return false;
  }
  slot = reinterpret_cast<F>(symbol);
  return true;
}

} // namespace kiln
