// Meta-parameters of a kernel (tile sizes, num_warps, num_stages, ...):
// trace-time integers, and the space of them an autotuner searches.
#pragma once

#include <kiln/tensor.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

/// Named integers fixed while a kernel is traced: `int BLOCK = cfg["BLOCK"];`.
/// `num_warps` (default 4) and `num_stages` (default 3) also steer the
/// compiler.
class Config {
public:
  /// A name looked up in a Config, with the line that looked it up.
  struct Key {
    std::string_view name;
    Loc loc;
    Key(const char *name, Loc loc = Loc::current()) : name(name), loc(loc) {}
    Key(const std::string &name, Loc loc = Loc::current()) : name(name), loc(loc) {}
  };

  Config() = default;
  Config(std::initializer_list<std::pair<const std::string, int64_t>> values) : values_(values) {}

  /// The value of `key`; a missing name is a TraceError at the caller's line.
  /// Lookups (here, in get() and in has()) while a kernel is traced are
  /// noted: Kernel::trace tells which names a kernel read.
  int64_t operator[](Key key) const;
  int64_t get(std::string_view name, int64_t fallback) const;
  bool has(std::string_view name) const;
  Config &set(const std::string &name, int64_t value) {
    values_[name] = value;
    return *this;
  }
  /// Entries of `other` override ours.
  Config merged(const Config &other) const;

  int num_warps() const { return static_cast<int>(get("num_warps", 4)); }
  int num_stages() const { return static_cast<int>(get("num_stages", 3)); }
  /// Programs each multiprocessor must hold at once (0: no bound); the
  /// compiler caps registers per thread to fit them, as CUDA's
  /// __launch_bounds__ minimum blocks.
  int min_blocks_per_sm() const { return static_cast<int>(get("min_blocks_per_sm", 0)); }
  /// 1: loops fed by the copy engine into a wgmma dot get a producer
  /// warpgroup (launched past num_warps) that issues their copies (sm_90a).
  bool warp_specialize() const { return get("warp_specialize", 0) != 0; }
  /// 1: where a producer warpgroup feeds a loop of chained dots
  /// (attention) and the program has two consumer warpgroups or more, they
  /// take turns on the tensor cores (docs/schedules.md); 0 (the default):
  /// they run out of step as they drift.
  bool ping_pong() const { return get("ping_pong", 0) != 0; }
  /// 1 (the default): where a producer feeds a loop of chained dots whose
  /// warpgroups do not take turns, each warpgroup's work between the dots
  /// (attention's softmax) runs under its own last dot (docs/schedules.md);
  /// 0 leaves the last dot in flight only across the back edge.
  bool overlap_chain() const { return get("overlap_chain", 1) != 0; }
  /// 1 (the default, as Triton's enable_fp_fusion): the GPU code may
  /// contract a float multiply and add into one fma (rounded once); 0 keeps
  /// both roundings, as the interpreter computes.
  bool fp_fusion() const { return get("fp_fusion", 1) != 0; }
  /// 1 (the default, as Triton's `/`): the GPU code divides f32 values
  /// with PTX's div.full.f32, at most 2 ulp from the IEEE quotient; 0
  /// keeps IEEE division, as the interpreter computes.
  bool approx_div() const { return get("approx_div", 1) != 0; }
  /// 1 (the default): on Hopper, a pointer-block load feeding a tensor-core
  /// dot in a pipelined loop that reads exactly a box of a tensor is a
  /// copy-engine copy (docs/schedules.md); 0 keeps per-thread copies.
  bool copy_engine() const { return get("copy_engine", 1) != 0; }
  /// Programs launched together as a thread-block cluster (1, 2, 4 or 8
  /// consecutive programs along grid axis 0; sm_90+): see cluster_id().
  int cluster_size() const { return static_cast<int>(get("cluster_size", 1)); }
  /// The names the compiler reads (num_warps, num_stages, min_blocks_per_sm,
  /// warp_specialize, ping_pong, overlap_chain, cluster_size, fp_fusion,
  /// approx_div, copy_engine), sorted.
  static const std::vector<std::string> &compiler_keys();

  const std::map<std::string, int64_t, std::less<>> &values() const { return values_; }
  /// "BLOCK=1024,num_warps=4" (names sorted): printable and a cache key.
  std::string str() const;
  /// Parses "K=V,K=V" (or separate "K=V" items); throws kiln::Error on bad text.
  static Config parse(std::string_view text);

  friend bool operator==(const Config &, const Config &) = default;

private:
  std::map<std::string, int64_t, std::less<>> values_;
};

/// The configurations a kernel may be tuned over: the product of named axes,
/// minus those a constraint rejects (each constraint says why).
class ConfigSpace {
public:
  ConfigSpace &axis(const std::string &name, std::vector<int64_t> values);
  /// Keeps configs for which `ok` holds; `reason` says what the others break
  /// ("A and B tiles must fit in 227 KB of shared memory").
  ConfigSpace &constraint(const std::string &reason, std::function<bool(const Config &)> ok);

  struct Rejected {
    Config config;
    std::string reason;
  };
  /// Every config of the product, with `fixed` entries added; split into the
  /// valid ones and the rejected ones with the first failing reason.
  std::vector<Config> valid(const Config &fixed = {}, std::vector<Rejected> *rejected = nullptr) const;
  /// The reason `config` is invalid, or empty.
  std::string check(const Config &config) const;

  const std::vector<std::pair<std::string, std::vector<int64_t>>> &axes() const { return axes_; }
  bool empty() const { return axes_.empty(); }

private:
  std::vector<std::pair<std::string, std::vector<int64_t>>> axes_;
  std::vector<std::pair<std::string, std::function<bool(const Config &)>>> constraints_;
};

} // namespace kiln
