"""Kiln's ops library from Python through its C ABI (ctypes), on the tensors
of any framework that speaks the DLPack protocol (__dlpack__: PyTorch,
NumPy, CuPy, JAX): no compiled extension.

    import kiln_ops
    ops = kiln_ops.load()        # $KILN_OPS_LIBRARY, else libkiln_ops.so where the loader finds it
    ops.layer_norm(x, weight, bias, 1e-5, y)         # y preallocated
    ops.pointwise("gelu(in0 * in1 + in2)", [x, w, b], [y])

Every call runs on the tensors' device (CUDA tensors on the current stream:
PyTorch's or CuPy's, else the default stream; CPU tensors on Kiln's
interpreter) and raises KilnError with the library's message when it refuses
the arguments.
"""
import ctypes
import os

SUM, MEAN, MAX, MIN, ARGMAX, ARGMIN, VAR = range(7)
# kiln_matmul activations (KILN_ACTIVATION_*)
ACTIVATION_NONE, ACTIVATION_RELU, ACTIVATION_GELU, ACTIVATION_SILU = range(4)
# how kiln_matmul multiplies f32 operands (KILN_PRECISION_*)
PRECISION_IEEE, PRECISION_TF32, PRECISION_TF32X3 = range(3)
# kiln_attention layouts and masks (KILN_ATTENTION_LAYOUT_*, KILN_ATTENTION_MASK_*)
LAYOUT_BSHD, LAYOUT_BHSD = range(2)
MASK_NONE, MASK_CAUSAL_TOP_LEFT, MASK_CAUSAL_BOTTOM_RIGHT = range(3)
ABI_VERSION = 6
_KDLCPU, _KDLCUDA = 1, 2  # DLPack device types


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class AttentionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_int64), ("layout", ctypes.c_int), ("mask", ctypes.c_int),
                ("scale", ctypes.c_double), ("has_window", ctypes.c_int), ("window_left", ctypes.c_int64),
                ("window_right", ctypes.c_int64), ("softcap", ctypes.c_double),
                ("cu_seqlens_q", ctypes.c_void_p), ("cu_seqlens_k", ctypes.c_void_p),
                ("block_table", ctypes.c_void_p), ("cache_seqlens", ctypes.c_void_p), ("num_splits", ctypes.c_int),
                ("unchecked_indices", ctypes.c_int), ("score_mod", ctypes.c_char_p), ("mask_mod", ctypes.c_char_p),
                ("num_tensors", ctypes.c_int), ("tensor_names", ctypes.POINTER(ctypes.c_char_p)),
                ("tensors", ctypes.POINTER(ctypes.POINTER(DLTensor)))]


class KilnError(RuntimeError):
    pass


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _is_torch(tensor):
    return type(tensor).__module__.startswith("torch")


class _Borrowed:
    """A tensor's DLTensor, kept alive (with its capsule) for one call."""

    def __init__(self, tensor):
        fp8 = None
        if _is_torch(tensor):
            import torch
            import torch.utils.dlpack
            # (PyTorch's DLPack export may not take float8: its bytes go as
            # uint8, the DLTensor then marked with DLPack 1.1's float8 code.)
            fp8 = {torch.float8_e4m3fn: 10, torch.float8_e5m2: 12}.get(tensor.dtype)
            self.capsule = torch.utils.dlpack.to_dlpack(tensor.view(torch.uint8) if fp8 else tensor)
        elif hasattr(tensor, "__dlpack__"):
            # (Kiln writes outputs in place: a read-only array's export
            # fails in its own framework, as it should.)
            self.capsule = tensor.__dlpack__()
        else:
            raise KilnError(f"a {type(tensor).__name__} is not a tensor (no __dlpack__)")
        managed = ctypes.cast(_get_pointer(self.capsule, b"dltensor"), ctypes.POINTER(DLManagedTensor))
        if fp8:
            managed.contents.dl_tensor.dtype.code = fp8
        self.pointer = ctypes.pointer(managed.contents.dl_tensor)


def _pointer(borrowed):
    return borrowed.pointer if borrowed is not None else None


def _modifiers(options, score_mod, mask_mod, tensors):
    """Sets options' modifier fields; returns what must live through the call."""
    borrowed = [_Borrowed(t) for t in (tensors or {}).values()]
    names = (ctypes.c_char_p * max(1, len(borrowed)))(*[n.encode() for n in (tensors or {})])
    views = (ctypes.POINTER(DLTensor) * max(1, len(borrowed)))(*[b.pointer for b in borrowed])
    options.score_mod = score_mod.encode() if score_mod else None
    options.mask_mod = mask_mod.encode() if mask_mod else None
    options.num_tensors = len(borrowed)
    options.tensor_names = ctypes.cast(names, ctypes.POINTER(ctypes.c_char_p))
    options.tensors = ctypes.cast(views, ctypes.POINTER(ctypes.POINTER(DLTensor)))
    return borrowed, names, views


class Library:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        T = ctypes.POINTER(DLTensor)
        TT = ctypes.POINTER(T)
        lib.kiln_ops_version.restype = ctypes.c_char_p
        lib.kiln_ops_last_error.restype = ctypes.c_char_p
        lib.kiln_pointwise.argtypes = [ctypes.c_char_p, TT, ctypes.c_int, TT, ctypes.c_int, ctypes.c_void_p]
        lib.kiln_reduce.argtypes = [ctypes.c_int, T, ctypes.c_int64, T, ctypes.c_int, ctypes.c_void_p]
        lib.kiln_reduce_fused.argtypes = [ctypes.c_int, ctypes.c_char_p, TT, ctypes.c_int, ctypes.c_int64,
                                          ctypes.c_char_p, T, ctypes.c_int, ctypes.c_void_p]
        lib.kiln_softmax.argtypes = [T, T, ctypes.c_void_p]
        lib.kiln_log_softmax.argtypes = [T, T, ctypes.c_void_p]
        lib.kiln_layer_norm.argtypes = [T, T, T, ctypes.c_double, T, T, T, ctypes.c_void_p]
        lib.kiln_rms_norm.argtypes = [T, T, ctypes.c_double, T, T, ctypes.c_void_p]
        lib.kiln_matmul.argtypes = [T, T, T, T, ctypes.c_double, ctypes.c_int, ctypes.c_int, T, ctypes.c_void_p]
        lib.kiln_matmul_scaled.argtypes = [T, T, T, T, T, T, ctypes.c_double, ctypes.c_int, T, ctypes.c_void_p]
        lib.kiln_grouped_matmul.argtypes = [T, T, T, T, T, ctypes.c_double, ctypes.c_int, ctypes.c_int, T,
                                            ctypes.c_void_p]
        lib.kiln_attention.argtypes = [T, T, T, T, T, ctypes.POINTER(AttentionOptions), ctypes.c_void_p]
        lib.kiln_attention_backward.argtypes = [T, T, T, T, T, T, T, T, T, ctypes.POINTER(AttentionOptions),
                                                ctypes.c_int, ctypes.c_void_p]
        if lib.kiln_ops_abi_version() != ABI_VERSION:
            raise KilnError(f"{path} has ABI {lib.kiln_ops_abi_version()}, this binding speaks {ABI_VERSION}")
        self.lib = lib
        self.version = lib.kiln_ops_version().decode()

    def _stream(self, tensor):
        """The stream a call on `tensor` joins: its framework's current one."""
        if _is_torch(tensor):
            if tensor.is_cuda:
                import torch
                return ctypes.c_void_p(torch.cuda.current_stream(tensor.device).cuda_stream)
            return None
        device_type = tensor.__dlpack_device__()[0] if hasattr(tensor, "__dlpack_device__") else _KDLCPU
        if device_type == _KDLCUDA and type(tensor).__module__.startswith("cupy"):
            import cupy
            return ctypes.c_void_p(cupy.cuda.get_current_stream().ptr)
        return None

    def _check(self, status):
        if status != 0:
            raise KilnError(f"kiln_ops status {status}: {self.lib.kiln_ops_last_error().decode()}")

    def _array(self, tensors):
        borrowed = [_Borrowed(t) for t in tensors]
        array = (ctypes.POINTER(DLTensor) * len(borrowed))(*[b.pointer for b in borrowed])
        return borrowed, array

    def pointwise(self, expressions, inputs, outputs):
        keep_in, ins = self._array(inputs)
        keep_out, outs = self._array(outputs)
        self._check(self.lib.kiln_pointwise(expressions.encode(), ins, len(inputs), outs, len(outputs),
                                            self._stream(outputs[0])))

    def reduce(self, op, x, dim, out, correction=1):
        bx, bo = _Borrowed(x), _Borrowed(out)
        self._check(self.lib.kiln_reduce(op, bx.pointer, dim, bo.pointer, correction, self._stream(x)))

    def reduce_fused(self, op, prologue, inputs, dim, epilogue, out, correction=1):
        keep, ins = self._array(inputs)
        bo = _Borrowed(out)
        self._check(self.lib.kiln_reduce_fused(op, prologue.encode() if prologue else None, ins, len(inputs), dim,
                                               epilogue.encode() if epilogue else None, bo.pointer, correction,
                                               self._stream(out)))

    def softmax(self, x, y):
        bx, by = _Borrowed(x), _Borrowed(y)
        self._check(self.lib.kiln_softmax(bx.pointer, by.pointer, self._stream(x)))

    def log_softmax(self, x, y):
        bx, by = _Borrowed(x), _Borrowed(y)
        self._check(self.lib.kiln_log_softmax(bx.pointer, by.pointer, self._stream(x)))

    def layer_norm(self, x, weight, bias, eps, y, mean=None, rstd=None):
        b = [_Borrowed(t) if t is not None else None for t in (x, weight, bias, y, mean, rstd)]
        self._check(self.lib.kiln_layer_norm(_pointer(b[0]), _pointer(b[1]), _pointer(b[2]), eps, _pointer(b[3]),
                                             _pointer(b[4]), _pointer(b[5]), self._stream(x)))

    def rms_norm(self, x, weight, eps, y, rstd=None):
        b = [_Borrowed(t) if t is not None else None for t in (x, weight, y, rstd)]
        self._check(self.lib.kiln_rms_norm(_pointer(b[0]), _pointer(b[1]), eps, _pointer(b[2]), _pointer(b[3]),
                                           self._stream(x)))

    def matmul(self, a, b, out, bias=None, residual=None, alpha=1.0, activation=ACTIVATION_NONE,
               precision=PRECISION_IEEE):
        t = [_Borrowed(x) if x is not None else None for x in (a, b, bias, residual, out)]
        self._check(self.lib.kiln_matmul(_pointer(t[0]), _pointer(t[1]), _pointer(t[2]), _pointer(t[3]), alpha,
                                         activation, precision, _pointer(t[4]), self._stream(out)))

    def matmul_scaled(self, a, b, out, scale_a=None, scale_b=None, bias=None, residual=None, alpha=1.0,
                      activation=ACTIVATION_NONE):
        """out = activation(alpha * scale_a * scale_b * (a @ b) + bias) + residual; a and b may be fp8
        (torch.float8_e4m3fn, torch.float8_e5m2; a row-major, b the transpose of an [N, K] tensor, as
        torch._scaled_mm takes them); scale_a and scale_b: f32 of 1, M or N elements, or both block
        scales: scale_a [M, ceil(K / 128)], scale_b [ceil(K / 128), ceil(N / 128)] (a 128 x 128 block of
        b each; any strides)."""
        t = [_Borrowed(x) if x is not None else None for x in (a, b, scale_a, scale_b, bias, residual, out)]
        self._check(self.lib.kiln_matmul_scaled(*(_pointer(x) for x in t[:6]), alpha, activation, _pointer(t[6]),
                                                self._stream(out)))

    def grouped_matmul(self, a, b, offsets, out, scale_a=None, scale_b=None, alpha=1.0, activation=ACTIVATION_NONE,
                       precision=PRECISION_IEEE):
        """out[rows of group g] = activation(alpha * scale_a * scale_b[g] * (a[rows of g] @ b[g])), as
        torch._grouped_mm: a [M, K], b [G, K, N], offsets int32 [G] (each group's end row; read on the
        device only), out [M, N]; scale_a f32 of 1 or M elements, scale_b of 1 or [G, N]."""
        t = [_Borrowed(x) if x is not None else None for x in (a, b, offsets, scale_a, scale_b, out)]
        self._check(self.lib.kiln_grouped_matmul(*(_pointer(x) for x in t[:5]), alpha, activation, precision,
                                                 _pointer(t[5]), self._stream(out)))

    def attention(self, q, k, v, out, lse=None, layout=LAYOUT_BSHD, mask=MASK_NONE, scale=0.0, window=None,
                  softcap=0.0, cu_seqlens_q=None, cu_seqlens_k=None, block_table=None, cache_seqlens=None,
                  num_splits=0, check_indices=True, score_mod=None, mask_mod=None, tensors=None):
        """out = softmax(scale * q k^T + mask) v; lse (optional) gets each row's log-sum-exp;
        score_mod, mask_mod: modifier expressions over score, b, h, q_idx, kv_idx and the 1-D tensors of
        `tensors` (a dict of names), e.g. "tanh(score / 30) * 30", "doc[q_idx] == doc[kv_idx]";
        window: (left, right) keys around the diagonal, -1 for no bound on a side; cu_seqlens_q and
        cu_seqlens_k (int32 [batch + 1]): a packed batch of [tokens, heads, head_dim] tensors;
        block_table (int32 [batch, max_pages]) and cache_seqlens (int32 [batch]): k and v are a paged
        cache [pages, page_size, heads_kv, head_dim], check_indices=False: not read on the host (the caller
        vouches; the kernel clamps them); num_splits: split-KV runs (0: chosen)."""
        t = [_Borrowed(x) if x is not None else None
             for x in (q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, block_table, cache_seqlens)]
        left, right = window if window is not None else (-1, -1)
        optional = [ctypes.cast(_pointer(x), ctypes.c_void_p) if x else None for x in t[5:]]
        options = AttentionOptions(ctypes.sizeof(AttentionOptions), layout, mask, scale, int(window is not None),
                                   left, right, softcap, *optional, num_splits, int(not check_indices))
        alive = _modifiers(options, score_mod, mask_mod, tensors)  # noqa: F841 (kept through the call)
        self._check(self.lib.kiln_attention(_pointer(t[0]), _pointer(t[1]), _pointer(t[2]), _pointer(t[3]),
                                            _pointer(t[4]), ctypes.byref(options), self._stream(out)))

    def attention_backward(self, q, k, v, out, lse, dout, dq, dk, dv, layout=LAYOUT_BSHD, mask=MASK_NONE, scale=0.0,
                           window=None, softcap=0.0, cu_seqlens_q=None, cu_seqlens_k=None, deterministic=False,
                           score_mod=None, mask_mod=None, tensors=None):
        """dq, dk, dv of attention(q, k, v, out, lse, ...) with the same options (its out and lse, which is
        required here) from dout; deterministic=True: dq the same bits every run (no atomic adds)."""
        t = [_Borrowed(x) if x is not None else None
             for x in (q, k, v, out, lse, dout, dq, dk, dv, cu_seqlens_q, cu_seqlens_k)]
        left, right = window if window is not None else (-1, -1)
        optional = [ctypes.cast(_pointer(x), ctypes.c_void_p) if x else None for x in t[9:]]
        options = AttentionOptions(ctypes.sizeof(AttentionOptions), layout, mask, scale, int(window is not None),
                                   left, right, softcap, *optional, None, None, 0, 0)
        alive = _modifiers(options, score_mod, mask_mod, tensors)  # noqa: F841 (kept through the call)
        self._check(self.lib.kiln_attention_backward(*(_pointer(x) for x in t[:9]), ctypes.byref(options),
                                                     int(deterministic), self._stream(out)))


def load(path=None):
    """The ops library at `path`; by default the one $KILN_OPS_LIBRARY names,
    else libkiln_ops.so wherever the system's loader finds it (an installed
    Kiln's lib/ on LD_LIBRARY_PATH or in the loader's cache)."""
    path = path or os.environ.get("KILN_OPS_LIBRARY") or "libkiln_ops.so"
    try:
        return Library(path)
    except OSError as e:
        raise KilnError(f"cannot load Kiln's ops library ({e}); set KILN_OPS_LIBRARY to the path of "
                        "libkiln_ops.so, or pass it to kiln_ops.load") from None
