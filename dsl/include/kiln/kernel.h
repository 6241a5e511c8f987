// Kernels: C++ functions over Kiln handles, traced into IR for a Config.
#pragma once

#include <kiln/compiler.h>
#include <kiln/config.h>
#include <kiln/descriptor.h>
#include <kiln/module.h>
#include <kiln/runtime.h>
#include <kiln/tensor.h>

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace kiln {

/// Kernel parameter types: what a launch passes for each argument.
/// `Ptr<f32>`: a pointer to f32 in global memory; `ConstPtr<f32>`: one the
/// kernel only reads; `Scalar<i32>`: an integer or float passed by value.
template <DType T> struct Ptr : Tensor {
  static constexpr ElementType element{T, true, false};
  Ptr() = default;
  explicit Ptr(const Tensor &t) : Tensor(t) {}
};
template <DType T> struct ConstPtr : Tensor {
  static constexpr ElementType element{T, true, true};
  ConstPtr() = default;
  explicit ConstPtr(const Tensor &t) : Tensor(t) {}
};
template <DType T> struct Scalar : Tensor {
  static constexpr ElementType element{T, false, false};
  Scalar() = default;
  explicit Scalar(const Tensor &t) : Tensor(t) {}
};
using Int = Scalar<DType::i32>;
using Long = Scalar<DType::i64>;
using Float = Scalar<DType::f32>;

/// What a launch knows about each argument's value, so that new sizes reuse
/// compiled code: only integers equal to 1, integers divisible by 16 (or by
/// 8 only: strides of 16 bytes of a 16-bit type), integers of zero or less
/// and pointers aligned to 16 bytes are told apart. An integer argument of
/// a specialization is positive unless it says `nonpositive`.
struct ArgSpecialization {
  bool divisible_by_16 = false;
  bool equal_to_1 = false;
  bool divisible_by_8 = false; ///< integers divisible by 8 but not by 16
  bool nonpositive = false;    ///< integers of zero or less (their divisibility is told too)
  friend bool operator==(const ArgSpecialization &, const ArgSpecialization &) = default;
};
struct Specialization {
  std::vector<ArgSpecialization> args; ///< empty: nothing known
  /// "d.18n" style: one character per argument ('d' divisible by 16, '8' by
  /// 8 only, '1' equal to 1, '.' nothing more; an integer of zero or less
  /// 'z' divisible by 16, 'y' by 8 only, 'n' neither: an integer argument is
  /// positive unless it is one of those).
  std::string str() const;
  friend bool operator==(const Specialization &, const Specialization &) = default;
};

namespace detail {
/// A launch argument as the kernel parameters it stands for.
inline void append_arg(std::vector<Arg> &out, const TensorArg &arg) { arg.append_to(out); }
template <class A>
  requires(!std::is_same_v<std::decay_t<A>, TensorArg>)
void append_arg(std::vector<Arg> &out, A &&arg) {
  out.push_back(Arg(std::forward<A>(arg)));
}
} // namespace detail

class Program; // (kiln/program.h: a kernel loaded on a device)

class Kernel {
public:
  using Body = std::function<void(const Config &, const std::vector<Tensor> &)>;

  Kernel() = default;
  Kernel(std::string name, std::vector<ElementType> signature, Body body);

  const std::string &name() const;
  const std::vector<ElementType> &signature() const;

  /// Config entries used when a launch or trace does not give them.
  Kernel &defaults(Config config); ///< (forgets compiled code, which the defaults shaped)
  const Config &default_config() const;
  /// The configurations the autotuner may try.
  Kernel &space(ConfigSpace space);
  const ConfigSpace &config_space() const;

  /// Marks the kernel as a library's own (the ops library's, say): it is
  /// traced under LibraryScope(what), on whichever thread traces it.
  Kernel &library(std::string what);

  /// Traces the kernel for `config` (merged over the defaults) into a
  /// verified module. Throws TraceError for mistakes in the kernel. With
  /// `keys_read`, also gives the config names the trace looked up and those
  /// the compiler reads (Config::compiler_keys()), sorted: an entry of the
  /// config named nowhere there steers nothing (a mistyped name, say).
  Module trace(const Config &config = {}, const Specialization &spec = {},
               std::vector<std::string> *keys_read = nullptr) const;

  /// Runs the kernel on `grid` with `config` (merged over the defaults) on
  /// the stream's device: the interpreter runs it at once; a GPU queues it.
  /// Compiled code is kept per (config, specialization, device), so later
  /// launches with new sizes reuse it. Arguments: Buffers (or host spans for
  /// the interpreter) for pointers, C++ numbers for scalars, TensorArgs for
  /// descriptors.
  template <class... A>
  void launch(const Grid &grid, const Config &config, const Stream &stream, A &&...args) const {
    if constexpr ((std::is_same_v<std::decay_t<A>, TensorArg> || ...)) { // descriptors take several
      std::vector<Arg> packed;
      (detail::append_arg(packed, std::forward<A>(args)), ...);
      launch_with(grid, config, stream, packed);
    } else {
      const std::array<Arg, sizeof...(A)> packed{Arg(std::forward<A>(args))...};
      launch_with(grid, config, stream, packed);
    }
  }
  void launch_with(const Grid &grid, const Config &config, const Stream &stream, std::span<const Arg> args) const;

  /// What launches with `args` specialize on (see Specialization).
  Specialization specialize(std::span<const Arg> args) const;

  /// Compiles the kernel for `config` (merged over the defaults) and `spec`
  /// to `arch` ("sm_90a", "sm_80"), through the on-disk kernel cache: what a
  /// launch does before loading, and needs no GPU. Throws kiln::Error when
  /// a stage fails.
  CompiledKernel compile(const Config &config, const Specialization &spec, const std::string &arch) const;

  /// How many clusters of `config`'s programs (`cluster_size` of them, or
  /// single programs) the stream's device runs at once, given the threads,
  /// registers and shared memory the compiled kernel takes: the most a
  /// persistent grid should launch. Compiles and loads the kernel for
  /// `args` as a launch would. The interpreter runs one at a time: 1.
  int resident_clusters(const Config &config, const Stream &stream, std::span<const Arg> args) const;

private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  /// trace() of a config already merged over the defaults (the launch path
  /// merges once).
  Module traceMerged(const Config &config, const Specialization &spec, std::vector<std::string> *keys_read) const;
  /// The kernel for `args` on `device`: loaded from the kernel cache, or
  /// traced, compiled (GPUs) and loaded.
  std::shared_ptr<const Program> programFor(const Config &config, const Device &device,
                                            std::span<const Arg> args) const;
  /// The kernel compiled for `config` (already merged over the defaults)
  /// and `spec` for `arch`: from the kernel cache, the disk cache, or
  /// compiled.
  std::shared_ptr<const CompiledKernel> compiledFor(const Config &config, const Specialization &spec,
                                                    const std::string &arch) const;
};

/// The compiler settings `config` asks for (num_warps, num_stages,
/// min_blocks_per_sm, warp_specialize, ping_pong, overlap_chain, fp_fusion,
/// approx_div, copy_engine) for `arch`; the others keep their defaults.
CompileOptions compile_options(const Config &config, const std::string &arch);

/// The compile target of a GPU (Device::arch: "sm_90a" for Hopper,
/// "sm_<cc>" for other NVIDIA GPUs, the gfx name of an AMD one);
/// $KILN_TARGET when set (a kiln::Error when it names no target Kiln
/// compiles for, or one of the other vendor's).
std::string target_for(const Device &device);

/// Marks the DSL operations that run on this thread while it lives as a
/// library's own code: their trace-time errors name the library's caller,
/// not the library's source lines, which mean nothing to its users. The
/// outermost scope on a thread decides (a library calling itself stays the
/// library).
class LibraryScope {
public:
  /// For a function users call inside their kernels, which takes
  /// `Loc loc = Loc::current()` and passes it here: errors, and the IR's
  /// locations, name that line of the user's.
  explicit LibraryScope(Loc caller);
  /// For a library's own kernel, traced for a call from host code: errors
  /// read "<what>: <message>" with no source line (`what` names the call,
  /// as "layer_norm"); the IR keeps the library's lines for its developers.
  explicit LibraryScope(std::string what);
  ~LibraryScope();
  LibraryScope(const LibraryScope &) = delete;
  LibraryScope &operator=(const LibraryScope &) = delete;

private:
  bool outermost_;
};

namespace detail {
template <class T> struct FunctionArgs;
template <class R, class... A> struct FunctionArgs<R (*)(A...)> {
  using type = std::tuple<std::decay_t<A>...>;
};
template <class C, class R, class... A> struct FunctionArgs<R (C::*)(A...) const> {
  using type = std::tuple<std::decay_t<A>...>;
};
template <class F, class = void> struct CallableArgs {
  using type = typename FunctionArgs<std::decay_t<F>>::type;
};
template <class F>
struct CallableArgs<F, std::void_t<decltype(&std::decay_t<F>::operator())>> {
  using type = typename FunctionArgs<decltype(&std::decay_t<F>::operator())>::type;
};

template <class T> constexpr bool is_kernel_param() {
  return (requires { T::element; } && std::is_base_of_v<Tensor, T>) ||
         (requires { T::elements(); } && std::is_base_of_v<Descriptor, T>);
}

/// How many kernel parameters a C++ parameter of type T stands for.
template <class T> constexpr size_t param_arity() {
  if constexpr (requires { T::arity; })
    return T::arity;
  else
    return 1;
}

template <class T> void append_elements(std::vector<ElementType> &signature) {
  if constexpr (requires { T::elements(); }) {
    for (const ElementType &e : T::elements())
      signature.push_back(e);
  } else {
    signature.push_back(T::element);
  }
}

/// The handle of parameter type T from the kernel arguments at `first`.
template <class T> T param_at(const std::vector<Tensor> &args, size_t first) {
  if constexpr (requires { T::arity; })
    return T(std::span<const Tensor>(args).subspan(first, T::arity));
  else
    return T(args[first]);
}

/// Where each C++ parameter's kernel parameters start.
template <class... P> constexpr std::array<size_t, sizeof...(P)> param_offsets() {
  std::array<size_t, sizeof...(P)> offsets{};
  size_t arities[] = {param_arity<P>()..., 0};
  for (size_t i = 1; i < sizeof...(P); ++i)
    offsets[i] = offsets[i - 1] + arities[i - 1];
  return offsets;
}

template <class... P> std::vector<ElementType> signature_of() {
  std::vector<ElementType> signature;
  (append_elements<P>(signature), ...);
  return signature;
}

template <class Fn, class... P> Kernel make_kernel(std::string name, Fn fn, std::tuple<Config, P...> *) {
  static_assert((is_kernel_param<P>() && ...),
                "kernel parameters after the Config must be Ptr<T>, ConstPtr<T>, Scalar<T> or TensorDesc<T, R>");
  Kernel::Body body = [fn](const Config &config, const std::vector<Tensor> &args) {
    constexpr auto offsets = param_offsets<P...>();
    [&]<size_t... I>(std::index_sequence<I...>) { fn(config, param_at<P>(args, offsets[I])...); }(
        std::index_sequence_for<P...>());
  };
  return Kernel(std::move(name), signature_of<P...>(), std::move(body));
}

template <class Fn, class... P> Kernel make_kernel(std::string name, Fn fn, std::tuple<P...> *) {
  static_assert((is_kernel_param<P>() && ...),
                "kernel parameters must be Ptr<T>, ConstPtr<T>, Scalar<T> or TensorDesc<T, R> (optionally "
                "after a leading const Config&)");
  Kernel::Body body = [fn](const Config &, const std::vector<Tensor> &args) {
    constexpr auto offsets = param_offsets<P...>();
    [&]<size_t... I>(std::index_sequence<I...>) { fn(param_at<P>(args, offsets[I])...); }(
        std::index_sequence_for<P...>());
  };
  return Kernel(std::move(name), signature_of<P...>(), std::move(body));
}

} // namespace detail

/// Makes a Kernel of a function (or lambda) whose parameters are an optional
/// leading `const Config&` and then `Ptr<T>`/`ConstPtr<T>`/`Scalar<T>`/
/// `TensorDesc<T, Rank>` (which stands for several kernel parameters).
template <class Fn> Kernel jit(Fn fn, std::string name) {
  using Args = typename detail::CallableArgs<Fn>::type;
  return detail::make_kernel(std::move(name), fn, static_cast<Args *>(nullptr));
}

} // namespace kiln
