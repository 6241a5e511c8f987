// The trust rules both stores share (cache.h): where the cache lives, which
// directories they may write into, which files they may read back, and
// writing a file whole.

#include <kiln/cache.h>

#include "cache/CacheFiles.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <vector>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace kiln {

namespace {

/// The effective user's home directory from the password database (where
/// no environment names one: daemons, some containers), or "".
std::string homeOfEffectiveUser() {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd entry{};
  passwd *found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found || !found->pw_dir)
    return "";
  return found->pw_dir;
}

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

/// Why a file or directory with these attributes is not the effective
/// user's alone, or "".
std::string ownershipProblem(const std::string &path, const struct stat &st) {
  if (st.st_uid != ::geteuid())
    return path + " belongs to user " + std::to_string(st.st_uid) + ", not to this process's user " +
           std::to_string(::geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return path + " is writable by other users (mode " + octal(st.st_mode) + ")";
  return "";
}

} // namespace

std::string cache_root() {
  if (const char *dir = std::getenv("KILN_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/kiln";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/kiln";
  if (std::string home = homeOfEffectiveUser(); !home.empty())
    return home + "/.cache/kiln";
  return "";
}

std::string private_directory_problem(const std::string &directory) {
  if (directory.empty())
    return "there is no cache directory (the user has no home directory; set KILN_CACHE_DIR)";
  fs::path dir = fs::path(directory).lexically_normal();
  if (!dir.has_filename()) // "a/b/" names a/b: lstat must not follow b if it is a link
    dir = dir.parent_path();
  fs::path made;
  for (const fs::path &part : dir) {
    made /= part;
    if (::mkdir(made.c_str(), 0700) != 0 && errno != EEXIST)
      return "cannot create " + made.string() + ": " + std::strerror(errno);
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0)
    return "cannot inspect " + dir.string() + ": " + std::strerror(errno);
  if (S_ISLNK(st.st_mode))
    return dir.string() + " is a symbolic link";
  if (!S_ISDIR(st.st_mode))
    return dir.string() + " is not a directory";
  return ownershipProblem(dir.string(), st);
}

CacheFile read_cache_file(const std::string &path) {
  CacheFile file;
  // O_NONBLOCK: a FIFO planted under the name must not block the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT) {
      file.status = CacheFile::refused;
      file.why = errno == ELOOP ? path + " is a symbolic link" : "cannot open " + path + ": " + std::strerror(errno);
    }
    return file;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0)
    file.why = "cannot inspect " + path + ": " + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    file.why = path + " is not a regular file";
  else
    file.why = ownershipProblem(path, st);
  if (file.why.empty()) {
    char buffer[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        file.why = "cannot read " + path + ": " + std::strerror(errno);
      if (n <= 0)
        break;
      file.contents.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  file.status = file.why.empty() ? CacheFile::read : CacheFile::refused;
  return file;
}

void warn_once(const std::string &message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(message).second)
    std::cerr << "kiln: " << message << "\n";
}

int write_all(int fd, std::string_view data) {
  for (size_t done = 0; done < data.size();) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n > 0)
      done += static_cast<size_t>(n);
    else if (n == 0 || errno != EINTR)
      return n == 0 ? EIO : errno;
  }
  return 0;
}

} // namespace kiln
