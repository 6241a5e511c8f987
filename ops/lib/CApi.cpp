//===- CApi.cpp - the ops library's C ABI over DLPack ---------------------===//
//
// Each entry point converts its DLTensors into TensorViews (checking what
// the ABI promises: non-null, a supported dtype and device, one device for
// all), runs the C++ op, and turns every exception into a status and a
// thread-local message.
//
//===----------------------------------------------------------------------===//

#include <kiln/ops/library.h>
#include <kiln/error.h>
#include <kiln/version.h>
#include <kiln_ops.h>

#include <cstddef>
#include <exception>
#include <optional>
#include <string>

namespace kiln::ops {
namespace {

thread_local std::string lastError;

/// An argument the ABI layer itself rejects.
struct InvalidArgument : std::exception {
  explicit InvalidArgument(std::string why) : message(std::move(why)) {}
  const char *what() const noexcept override { return message.c_str(); }
  std::string message;
};

DType dtypeOf(const DLDataType &t, const std::string &role) {
  if (t.lanes != 1)
    throw InvalidArgument(role + ": vector dtypes (lanes " + std::to_string(t.lanes) + ") are not supported");
  switch (t.code) {
  case kDLFloat:
    if (t.bits == 16) return DType::f16;
    if (t.bits == 32) return DType::f32;
    if (t.bits == 64) return DType::f64;
    break;
  case kDLBfloat:
    if (t.bits == 16) return DType::bf16;
    break;
  case kDLInt:
    if (t.bits == 8) return DType::i8;
    if (t.bits == 16) return DType::i16;
    if (t.bits == 32) return DType::i32;
    if (t.bits == 64) return DType::i64;
    break;
  case kDLUInt:
    if (t.bits == 1 || t.bits == 8) return t.bits == 1 ? DType::i1 : DType::u8;
    if (t.bits == 16) return DType::u16;
    if (t.bits == 32) return DType::u32;
    if (t.bits == 64) return DType::u64;
    break;
  case 6: // kDLBool (DLPack 0.8+): one byte per value
    if (t.bits == 8) return DType::i1;
    break;
  case 10: // kDLFloat8_e4m3fn (DLPack 1.1+)
    if (t.bits == 8) return DType::f8e4m3;
    break;
  case 12: // kDLFloat8_e5m2 (DLPack 1.1+)
    if (t.bits == 8) return DType::f8e5m2;
    break;
  default:
    break;
  }
  throw InvalidArgument(role + ": DLPack dtype (code " + std::to_string(t.code) + ", bits " + std::to_string(t.bits) +
                        ") is not supported");
}

/// The devices a call's tensors are on: all must agree.
struct DeviceOf {
  std::optional<DLDevice> device;
  void check(const DLTensor &t, const std::string &role) {
    if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDA && t.device.device_type != kDLROCM)
      throw InvalidArgument(role + ": device type " + std::to_string(t.device.device_type) +
                            " is not supported (kDLCPU runs on the interpreter, kDLCUDA and kDLROCM on the GPU)");
    if (!device) {
      device = t.device;
      return;
    }
    if (device->device_type != t.device.device_type || device->device_id != t.device.device_id)
      throw InvalidArgument(role + " is on another device than the other tensors");
  }
};

TensorView viewOf(const DLTensor *t, const std::string &role, DeviceOf &devices) {
  if (!t)
    throw InvalidArgument(role + " is NULL");
  if (!t->data)
    throw InvalidArgument(role + " has no data (NULL)");
  if (t->ndim < 0 || t->ndim > 8)
    throw InvalidArgument(role + ": " + std::to_string(t->ndim) + " dimensions (0 to 8 are supported)");
  if (t->ndim > 0 && !t->shape)
    throw InvalidArgument(role + " has no shape");
  devices.check(*t, role);
  TensorView v;
  v.dtype = dtypeOf(t->dtype, role);
  v.address = reinterpret_cast<uint64_t>(t->data) + t->byte_offset;
  v.shape.assign(t->shape, t->shape + t->ndim);
  if (t->strides)
    v.strides.assign(t->strides, t->strides + t->ndim);
  v.device = t->device.device_type == kDLCPU    ? DeviceKind::interp
             : t->device.device_type == kDLROCM ? DeviceKind::hip
                                                 : DeviceKind::cuda;
  return v;
}

/// An optional tensor: NULL gives an absent view.
TensorView optionalView(const DLTensor *t, const std::string &role, DeviceOf &devices) {
  return t ? viewOf(t, role, devices) : TensorView{};
}

Stream streamFor(const DeviceOf &devices, void *stream) {
  if (!devices.device || devices.device->device_type == kDLCPU)
    return Stream(Device::interp());
  if (devices.device->device_type == kDLROCM)
    return Stream::wrap(Device::hip(devices.device->device_id), stream);
  return Stream::wrap(Device::cuda(devices.device->device_id), stream);
}

/// Runs `body`, turning exceptions into a status and the thread's message.
template <class F> int guarded(F &&body) {
  try {
    body();
    lastError.clear();
    return KILN_OK;
  } catch (const InvalidArgument &e) {
    lastError = e.what();
    return KILN_ERROR_INVALID_ARGUMENT;
  } catch (const Error &e) {
    lastError = e.what();
    return KILN_ERROR_FAILED;
  } catch (const std::exception &e) {
    lastError = std::string("internal error: ") + e.what();
    return KILN_ERROR_INTERNAL;
  } catch (...) {
    lastError = "internal error: an unknown exception";
    return KILN_ERROR_INTERNAL;
  }
}

Reduce reduceOf(int op) {
  switch (op) {
  case KILN_REDUCE_SUM: return Reduce::sum;
  case KILN_REDUCE_MEAN: return Reduce::mean;
  case KILN_REDUCE_MAX: return Reduce::max;
  case KILN_REDUCE_MIN: return Reduce::min;
  case KILN_REDUCE_ARGMAX: return Reduce::argmax;
  case KILN_REDUCE_ARGMIN: return Reduce::argmin;
  case KILN_REDUCE_VAR: return Reduce::var;
  default: throw InvalidArgument("unknown reduction " + std::to_string(op));
  }
}

int dimOf(int64_t dim) {
  if (dim < -8 || dim > 7)
    throw InvalidArgument("dim " + std::to_string(dim) + " is out of range");
  return static_cast<int>(dim);
}

/// The ';'-separated parts of `text`.
std::vector<std::string> splitExpressions(const char *text) {
  std::vector<std::string> parts;
  std::string all = text ? text : "", part;
  for (char c : all) {
    if (c == ';') {
      parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  if (part.find_first_not_of(" \t\n") != std::string::npos || parts.empty())
    parts.push_back(part);
  return parts;
}

/// What kiln_attention's options ask, their tensors' views included.
/// Fields past the caller's struct_size keep their defaults.
AttentionArgs attentionOptions(const kiln_attention_options &options, DeviceOf &devices) {
  if (options.struct_size < static_cast<int64_t>(sizeof(int64_t)))
    throw InvalidArgument("kiln_attention: options->struct_size is " + std::to_string(options.struct_size) +
                          "; set it to sizeof(kiln_attention_options)");
  auto covers = [&](size_t end) { return options.struct_size >= static_cast<int64_t>(end); };
  AttentionArgs args;
  if (covers(offsetof(kiln_attention_options, layout) + sizeof(int))) {
    if (options.layout != KILN_ATTENTION_LAYOUT_BSHD && options.layout != KILN_ATTENTION_LAYOUT_BHSD)
      throw InvalidArgument("kiln_attention: unknown layout " + std::to_string(options.layout));
    args.layout = options.layout == KILN_ATTENTION_LAYOUT_BSHD ? AttentionLayout::bshd : AttentionLayout::bhsd;
  }
  if (covers(offsetof(kiln_attention_options, mask) + sizeof(int))) {
    if (options.mask < KILN_ATTENTION_MASK_NONE || options.mask > KILN_ATTENTION_MASK_CAUSAL_BOTTOM_RIGHT)
      throw InvalidArgument("kiln_attention: unknown mask " + std::to_string(options.mask));
    static_assert(static_cast<int>(AttentionMask::causal_bottom_right) == KILN_ATTENTION_MASK_CAUSAL_BOTTOM_RIGHT &&
                  static_cast<int>(AttentionMask::causal_top_left) == KILN_ATTENTION_MASK_CAUSAL_TOP_LEFT);
    args.mask = static_cast<AttentionMask>(options.mask);
  }
  if (covers(offsetof(kiln_attention_options, scale) + sizeof(double)))
    args.scale = options.scale;
  if (covers(offsetof(kiln_attention_options, window_right) + sizeof(int64_t)) && options.has_window) {
    args.window_left = options.window_left;
    args.window_right = options.window_right;
  }
  if (covers(offsetof(kiln_attention_options, softcap) + sizeof(double)))
    args.softcap = options.softcap;
  if (covers(offsetof(kiln_attention_options, cu_seqlens_k) + sizeof(void *)) &&
      (options.cu_seqlens_q || options.cu_seqlens_k)) {
    args.cu_seqlens_q = viewOf(options.cu_seqlens_q, "cu_seqlens_q", devices);
    args.cu_seqlens_k = viewOf(options.cu_seqlens_k, "cu_seqlens_k", devices);
  }
  if (covers(offsetof(kiln_attention_options, cache_seqlens) + sizeof(void *))) {
    args.block_table = optionalView(options.block_table, "block_table", devices);
    args.cache_seqlens = optionalView(options.cache_seqlens, "cache_seqlens", devices);
  }
  if (covers(offsetof(kiln_attention_options, num_splits) + sizeof(int)))
    args.num_splits = options.num_splits;
  if (covers(offsetof(kiln_attention_options, unchecked_indices) + sizeof(int)))
    args.check_indices = options.unchecked_indices == 0;
  if (covers(offsetof(kiln_attention_options, tensors) + sizeof(void *)) && (options.score_mod || options.mask_mod)) {
    if (options.num_tensors < 0 || options.num_tensors > 64 ||
        (options.num_tensors > 0 && (!options.tensor_names || !options.tensors)))
      throw InvalidArgument("kiln_attention: num_tensors " + std::to_string(options.num_tensors) +
                            " needs as many tensor_names and tensors (at most 64)");
    std::vector<std::pair<std::string, TensorView>> named;
    for (int i = 0; i < options.num_tensors; ++i) {
      if (!options.tensor_names[i])
        throw InvalidArgument("kiln_attention: tensor_names[" + std::to_string(i) + "] is NULL");
      named.emplace_back(options.tensor_names[i], viewOf(options.tensors[i], options.tensor_names[i], devices));
    }
    args.modifiers = attention_modifiers(options.score_mod ? options.score_mod : "",
                                         options.mask_mod ? options.mask_mod : "", named);
  }
  return args;
}

} // namespace
} // namespace kiln::ops

using namespace kiln;
using namespace kiln::ops;

extern "C" {

int kiln_ops_abi_version(void) { return KILN_OPS_ABI_VERSION; }

const char *kiln_ops_version(void) { return kiln::version(); }

const char *kiln_ops_last_error(void) { return lastError.c_str(); }

int kiln_pointwise(const char *expressions, const DLTensor *const *inputs, int num_inputs,
                   const DLTensor *const *outputs, int num_outputs, void *stream) {
  return guarded([&] {
    if (num_inputs < 0 || num_outputs < 1 || (num_inputs > 0 && !inputs) || !outputs)
      throw InvalidArgument("kiln_pointwise: needs outputs (and the inputs' array when there are inputs)");
    std::vector<std::string> texts = splitExpressions(expressions);
    if (static_cast<int>(texts.size()) != num_outputs)
      throw InvalidArgument("kiln_pointwise: " + std::to_string(texts.size()) + " expressions for " +
                            std::to_string(num_outputs) + " outputs");
    DeviceOf devices;
    Pointwise pw;
    std::vector<DType> types;
    for (int i = 0; i < num_inputs; ++i) {
      TensorView v = viewOf(inputs[i], "input " + std::to_string(i), devices);
      types.push_back(v.dtype);
      pw.input(v);
    }
    for (int o = 0; o < num_outputs; ++o)
      pw.output(viewOf(outputs[o], "output " + std::to_string(o), devices), parse_expr(texts[o], types));
    pw.run(streamFor(devices, stream));
  });
}

int kiln_reduce(int op, const DLTensor *x, int64_t dim, const DLTensor *out, int correction, void *stream) {
  return guarded([&] {
    DeviceOf devices;
    TensorView in = viewOf(x, "x", devices), result = viewOf(out, "out", devices);
    reduce(reduceOf(op), in, dimOf(dim), result, streamFor(devices, stream), correction);
  });
}

int kiln_reduce_fused(int op, const char *prologue, const DLTensor *const *inputs, int num_inputs, int64_t dim,
                      const char *epilogue, const DLTensor *out, int correction, void *stream) {
  return guarded([&] {
    if (num_inputs < 1 || !inputs)
      throw InvalidArgument("kiln_reduce_fused: needs at least one input");
    DeviceOf devices;
    Reduction r(reduceOf(op), dimOf(dim), correction);
    std::vector<DType> types;
    for (int i = 0; i < num_inputs; ++i) {
      TensorView v = viewOf(inputs[i], "input " + std::to_string(i), devices);
      types.push_back(v.dtype);
      r.input(v);
    }
    if (prologue && *prologue)
      r.reduce(parse_expr(prologue, types));
    Expr after = epilogue && *epilogue ? parse_expr(epilogue, {}, r.reduced_dtype()) : Expr();
    r.output(viewOf(out, "out", devices), after);
    r.run(streamFor(devices, stream));
  });
}

int kiln_softmax(const DLTensor *x, const DLTensor *y, void *stream) {
  return guarded([&] {
    DeviceOf devices;
    TensorView in = viewOf(x, "x", devices), result = viewOf(y, "y", devices);
    softmax(in, result, streamFor(devices, stream));
  });
}

int kiln_log_softmax(const DLTensor *x, const DLTensor *y, void *stream) {
  return guarded([&] {
    DeviceOf devices;
    TensorView in = viewOf(x, "x", devices), result = viewOf(y, "y", devices);
    log_softmax(in, result, streamFor(devices, stream));
  });
}

int kiln_layer_norm(const DLTensor *x, const DLTensor *weight, const DLTensor *bias, double eps, const DLTensor *y,
                    const DLTensor *mean, const DLTensor *rstd, void *stream) {
  return guarded([&] {
    DeviceOf devices;
    TensorView in = viewOf(x, "x", devices), result = viewOf(y, "y", devices);
    TensorView w = optionalView(weight, "weight", devices), b = optionalView(bias, "bias", devices);
    TensorView m = optionalView(mean, "mean", devices), r = optionalView(rstd, "rstd", devices);
    layer_norm(in, w, b, eps, result, m, r, streamFor(devices, stream));
  });
}

int kiln_rms_norm(const DLTensor *x, const DLTensor *weight, double eps, const DLTensor *y, const DLTensor *rstd,
                  void *stream) {
  return guarded([&] {
    DeviceOf devices;
    TensorView in = viewOf(x, "x", devices), result = viewOf(y, "y", devices);
    TensorView w = optionalView(weight, "weight", devices), r = optionalView(rstd, "rstd", devices);
    rms_norm(in, w, eps, result, r, streamFor(devices, stream));
  });
}

/// What kiln_matmul and kiln_matmul_scaled share: the checked activation
/// and the operands, output and epilogue inputs as views.
static MatmulArgs matmulArgsOf(const std::string &function, const DLTensor *a, const DLTensor *b,
                               const DLTensor *bias, const DLTensor *residual, double alpha, int activation,
                               const DLTensor *out, DeviceOf &devices) {
  if (activation < KILN_ACTIVATION_NONE || activation > KILN_ACTIVATION_SILU)
    throw InvalidArgument(function + ": unknown activation " + std::to_string(activation));
  MatmulArgs args;
  args.a = viewOf(a, "a", devices);
  args.b = viewOf(b, "b", devices);
  args.out = viewOf(out, "out", devices);
  args.bias = optionalView(bias, "bias", devices);
  args.residual = optionalView(residual, "residual", devices);
  args.alpha = alpha;
  args.activation = static_cast<Activation>(activation);
  return args;
}

/// A KILN_PRECISION_* as the ops library's Precision; throws on others.
static Precision precisionOf(const std::string &function, int precision) {
  if (precision < KILN_PRECISION_IEEE || precision > KILN_PRECISION_TF32X3)
    throw InvalidArgument(function + ": unknown precision " + std::to_string(precision));
  return precision == KILN_PRECISION_TF32 ? Precision::tf32
         : precision == KILN_PRECISION_TF32X3 ? Precision::tf32x3
                                              : Precision::ieee;
}

int kiln_matmul(const DLTensor *a, const DLTensor *b, const DLTensor *bias, const DLTensor *residual, double alpha,
                int activation, int precision, const DLTensor *out, void *stream) {
  return guarded([&] {
    const Precision chosen = precisionOf("kiln_matmul", precision);
    DeviceOf devices;
    MatmulArgs args = matmulArgsOf("kiln_matmul", a, b, bias, residual, alpha, activation, out, devices);
    args.precision = chosen;
    matmul(args, streamFor(devices, stream));
  });
}

int kiln_grouped_matmul(const DLTensor *a, const DLTensor *b, const DLTensor *offsets, const DLTensor *scale_a,
                        const DLTensor *scale_b, double alpha, int activation, int precision, const DLTensor *out,
                        void *stream) {
  return guarded([&] {
    const Precision chosen = precisionOf("kiln_grouped_matmul", precision);
    DeviceOf devices;
    MatmulArgs m = matmulArgsOf("kiln_grouped_matmul", a, b, nullptr, nullptr, alpha, activation, out, devices);
    GroupedMatmulArgs args{m.a, m.b, viewOf(offsets, "offsets", devices), m.out, alpha, m.activation, chosen};
    args.scale_a = optionalView(scale_a, "scale_a", devices);
    args.scale_b = optionalView(scale_b, "scale_b", devices);
    grouped_matmul(args, streamFor(devices, stream));
  });
}

int kiln_matmul_scaled(const DLTensor *a, const DLTensor *b, const DLTensor *scale_a, const DLTensor *scale_b,
                       const DLTensor *bias, const DLTensor *residual, double alpha, int activation,
                       const DLTensor *out, void *stream) {
  return guarded([&] {
    DeviceOf devices;
    MatmulArgs args = matmulArgsOf("kiln_matmul_scaled", a, b, bias, residual, alpha, activation, out, devices);
    args.scale_a = optionalView(scale_a, "scale_a", devices);
    args.scale_b = optionalView(scale_b, "scale_b", devices);
    matmul(args, streamFor(devices, stream));
  });
}

int kiln_attention(const DLTensor *q, const DLTensor *k, const DLTensor *v, const DLTensor *out, const DLTensor *lse,
                   const kiln_attention_options *options, void *stream) {
  return guarded([&] {
    DeviceOf devices;
    AttentionArgs args = options ? attentionOptions(*options, devices) : AttentionArgs{};
    args.q = viewOf(q, "q", devices);
    args.k = viewOf(k, "k", devices);
    args.v = viewOf(v, "v", devices);
    args.out = viewOf(out, "out", devices);
    args.lse = optionalView(lse, "lse", devices);
    attention(args, streamFor(devices, stream));
  });
}

int kiln_attention_backward(const DLTensor *q, const DLTensor *k, const DLTensor *v, const DLTensor *out,
                            const DLTensor *lse, const DLTensor *dout, const DLTensor *dq, const DLTensor *dk,
                            const DLTensor *dv, const kiln_attention_options *options, int deterministic,
                            void *stream) {
  return guarded([&] {
    DeviceOf devices;
    AttentionBackwardArgs args;
    args.forward = options ? attentionOptions(*options, devices) : AttentionArgs{};
    args.forward.q = viewOf(q, "q", devices);
    args.forward.k = viewOf(k, "k", devices);
    args.forward.v = viewOf(v, "v", devices);
    args.forward.out = viewOf(out, "out", devices);
    args.forward.lse = viewOf(lse, "lse", devices);
    args.dout = viewOf(dout, "dout", devices);
    args.dq = viewOf(dq, "dq", devices);
    args.dk = viewOf(dk, "dk", devices);
    args.dv = viewOf(dv, "dv", devices);
    args.deterministic = deterministic != 0;
    attention_backward(args, streamFor(devices, stream));
  });
}

} // extern "C"
