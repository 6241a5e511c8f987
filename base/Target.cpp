//===- Target.cpp - GPU target names ---------------------------------------===//

#include <kiln/error.h>
#include <kiln/target.h>

#include <algorithm>
#include <iterator>

namespace kiln {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

int hexValue(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/// "sm_" then two or three digits (the last one the minor version), then
/// 'a', 'f' or nothing.
std::optional<Target> parseNvidia(std::string_view name) {
  std::string_view rest = name.substr(3);
  size_t digits = 0;
  while (digits < rest.size() && isDigit(rest[digits]))
    ++digits;
  if (digits < 2 || digits > 3 || rest[0] == '0')
    return std::nullopt;
  Target target;
  target.name = std::string(name);
  for (size_t i = 0; i + 1 < digits; ++i)
    target.major = target.major * 10 + (rest[i] - '0');
  target.minor = rest[digits - 1] - '0';
  std::string_view suffix = rest.substr(digits);
  if (suffix == "a" || suffix == "f")
    target.suffix = suffix[0];
  else if (!suffix.empty())
    return std::nullopt;
  return target;
}

/// "gfx" then the major version in decimal (one or two digits) and one
/// hexadecimal digit each for minor and stepping.
std::optional<Target> parseAmd(std::string_view name) {
  std::string_view rest = name.substr(3);
  if (rest.size() < 3 || rest.size() > 4 || !isDigit(rest[0]) || rest[0] == '0')
    return std::nullopt;
  Target target;
  target.vendor = GpuVendor::amd;
  target.name = std::string(name);
  for (size_t i = 0; i + 2 < rest.size(); ++i) {
    if (!isDigit(rest[i]))
      return std::nullopt;
    target.major = target.major * 10 + (rest[i] - '0');
  }
  target.minor = hexValue(rest[rest.size() - 2]);
  target.stepping = hexValue(rest[rest.size() - 1]);
  if (target.minor < 0 || target.stepping < 0)
    return std::nullopt;
  return target;
}

} // namespace

std::optional<Target> parse_target(std::string_view name) {
  if (name.substr(0, 3) == "sm_")
    return parseNvidia(name);
  if (name.substr(0, 3) == "gfx")
    return parseAmd(name);
  return std::nullopt;
}

bool targets_amd(std::string_view name) {
  std::optional<Target> target = parse_target(name);
  return target && target->vendor == GpuVendor::amd;
}

namespace {

/// The target `name` spells; throws when it spells none.
Target parsed(std::string_view name) {
  std::optional<Target> target = parse_target(name);
  if (!target)
    throw Error("'" + std::string(name) +
                "' is not a GPU target (NVIDIA targets read sm_XY with an optional 'a' or 'f', as sm_80 or sm_90a; "
                "AMD ones gfxNNN, as gfx90a)");
  return *target;
}

} // namespace

int threads_per_warp(const Target &target) { return target.vendor == GpuVendor::amd && target.major < 10 ? 64 : 32; }

Target check_target(std::string_view name) {
  Target target = parsed(name);
  if (target.vendor == GpuVendor::amd) {
    if (std::ranges::find(kAmdTargets, target.name) != std::end(kAmdTargets))
      return target;
    std::string known;
    for (const char *amd : kAmdTargets)
      known += (known.empty() ? "" : ", ") + std::string(amd);
    throw Error(target.name + " is an AMD GPU Kiln does not compile for (it compiles for " + known + ")");
  }
  if (target.compute_capability() < kMinimumComputeCapability)
    throw Error(target.name + " (compute capability " + std::to_string(target.major) + "." +
                std::to_string(target.minor) + ") is older than Kiln supports: its NVIDIA lowering needs sm_" +
                std::to_string(kMinimumComputeCapability) + " or newer");
  return target;
}

int compute_capability_of(std::string_view name) {
  std::optional<Target> target = parse_target(name);
  return target && target->vendor == GpuVendor::nvidia ? target->compute_capability() : 0;
}

bool cubin_runs_on(const Target &target, int device_cc) {
  if (target.vendor != GpuVendor::nvidia)
    return false;
  const int cc = target.compute_capability();
  if (target.suffix == 'a')
    return cc == device_cc;
  return cc / 10 == device_cc / 10 && cc <= device_cc;
}

int max_shared_memory_per_program(int cc) {
  constexpr int KB = 1024;
  if (cc == 120 || cc == 121 || cc == 86 || cc == 89)
    return 99 * KB;
  if (cc >= 90)
    return 227 * KB;
  if (cc >= 80)
    return 163 * KB;
  return 64 * KB;
}

} // namespace kiln
