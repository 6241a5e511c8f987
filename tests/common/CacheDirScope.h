// KILN_CACHE_DIR set for the scope of a test, so that it neither reads nor
// writes the user's caches; the earlier value is back after.
#pragma once

#include <cstdlib>
#include <string>

namespace kiln::testing {

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
  CacheDirScope(const CacheDirScope &) = delete;
  CacheDirScope &operator=(const CacheDirScope &) = delete;

private:
  std::string old_;
};

} // namespace kiln::testing
