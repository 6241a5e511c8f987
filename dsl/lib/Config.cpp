//===- Config.cpp - Config, ConfigSpace, Specialization -------------------===//

#include "dsl/lib/Trace.h"

#include <kiln/config.h>
#include <kiln/error.h>
#include <kiln/kernel.h>

#include <charconv>

namespace kiln {

namespace {
void noteLookup(std::string_view name) {
  if (detail::TraceContext *trace = detail::TraceContext::active())
    trace->note_config_key(name);
}
} // namespace

int64_t Config::operator[](Key key) const {
  noteLookup(key.name);
  auto it = values_.find(key.name);
  if (it == values_.end())
    detail::fail(key.loc, "the config has no entry '" + std::string(key.name) + "' (it has: " +
                              (values_.empty() ? std::string("nothing") : str()) +
                              "); give it in the launch config or the kernel's defaults");
  return it->second;
}

int64_t Config::get(std::string_view name, int64_t fallback) const {
  noteLookup(name);
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

bool Config::has(std::string_view name) const {
  noteLookup(name);
  return values_.find(name) != values_.end();
}

const std::vector<std::string> &Config::compiler_keys() {
  static const std::vector<std::string> keys{"approx_div", "cluster_size",  "copy_engine",
                                             "fp_fusion",  "min_blocks_per_sm", "num_stages",
                                             "num_warps",  "overlap_chain", "ping_pong",
                                             "warp_specialize"};
  return keys;
}

Config Config::merged(const Config &other) const {
  Config result = *this;
  for (const auto &[name, value] : other.values_)
    result.values_[name] = value;
  return result;
}

std::string Config::str() const {
  std::string text;
  for (const auto &[name, value] : values_)
    text += (text.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return text;
}

Config Config::parse(std::string_view text) {
  Config config;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(", ", start);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty())
      continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw Error("config entry '" + std::string(item) + "' is not NAME=VALUE");
    std::string_view number = item.substr(eq + 1);
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || ptr != number.data() + number.size())
      throw Error("config entry '" + std::string(item) + "': '" + std::string(number) +
                  "' is not an integer");
    config.set(std::string(item.substr(0, eq)), value);
  }
  return config;
}

ConfigSpace &ConfigSpace::axis(const std::string &name, std::vector<int64_t> values) {
  if (values.empty())
    throw Error("config space axis '" + name + "' has no values");
  axes_.emplace_back(name, std::move(values));
  return *this;
}

ConfigSpace &ConfigSpace::constraint(const std::string &reason,
                                     std::function<bool(const Config &)> ok) {
  constraints_.emplace_back(reason, std::move(ok));
  return *this;
}

std::string ConfigSpace::check(const Config &config) const {
  for (const auto &[reason, ok] : constraints_)
    if (!ok(config))
      return reason;
  return {};
}

std::vector<Config> ConfigSpace::valid(const Config &fixed, std::vector<Rejected> *rejected) const {
  std::vector<Config> configs{fixed};
  for (const auto &[name, values] : axes_) {
    if (fixed.has(name))
      continue;
    std::vector<Config> next;
    for (const Config &config : configs)
      for (int64_t value : values)
        next.push_back(Config(config).set(name, value));
    configs = std::move(next);
  }
  std::vector<Config> result;
  for (const Config &config : configs) {
    std::string reason = check(config);
    if (reason.empty())
      result.push_back(config);
    else if (rejected)
      rejected->push_back({config, reason});
  }
  return result;
}

std::string Specialization::str() const {
  std::string text;
  for (const ArgSpecialization &arg : args)
    text += arg.nonpositive ? (arg.divisible_by_16 ? 'z' : arg.divisible_by_8 ? 'y' : 'n')
            : arg.equal_to_1  ? '1'
            : arg.divisible_by_16 ? 'd'
            : arg.divisible_by_8  ? '8'
                                  : '.';
  return text;
}

} // namespace kiln
