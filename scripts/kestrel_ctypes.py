"""Kestrel on torch tensors, through the C ABI (include/kestrel/c_api.h,
build/libkestrel_c.so) and ctypes: the row-wise ops, NVFP4 quantization and
the NVFP4 GEMMs.

    lib = KestrelLib("build/libkestrel_c.so")
    fn, out = kestrel_case(lib, op, params, inputs)  # inputs: torch_peers.make_inputs
    fn()  # runs the op on torch's current stream; `out` holds its main output

    a = quantize(lib, x)             # x: [L][M][K] or [M][K] bf16/fp16/fp32
    w = quantize(lib, weights, blocked=True)
    c = gemm(lib, a, w)              # [L][M][N] bf16
    h = dual_gemm(lib, a, w1, w2)    # silu(a w1^T) * (a w2^T)

Outputs are allocated once, by torch, so Kestrel and torch.compile run on
buffers from the same allocator; each call raises on a nonzero status, with
Kestrel's message.
"""
import ctypes

import torch

_DTYPE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_REDUCTION = {"none": 0, "sum": 1, "mean": 2}
_P, _I64, _I32, _F32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float

_SIGNATURES = {
    "kestrel_rmsnorm_fwd": [_P, _P, _P, _I32, _P, _P, _P, _I64, _I64, _I32, _F32, _P],
    "kestrel_rmsnorm_bwd": [_P, _P, _P, _I32, _P, _P, _P, _I32, _I64, _I64, _I32, _P],
    "kestrel_softmax_fwd": [_P, _P, _I64, _I64, _I32, _P],
    "kestrel_softmax_bwd": [_P, _P, _P, _I64, _I64, _I32, _P],
    "kestrel_cross_entropy_fwd": [_P, _P, _P, _P, _P, _I64, _I64, _I32, _I64, _F32, _I32, _P],
    "kestrel_cross_entropy_bwd": [_P, _P, _P, _P, _P, _P, _I64, _I64, _I32, _I64, _F32, _I32, _P],
}



class Nvfp4(ctypes.Structure):
    """kestrel_nvfp4: an NVFP4 tensor of batches x rows x k values."""
    _fields_ = [("values", _P), ("scales", _P), ("batches", _I64), ("rows", _I64), ("k", _I64),
                ("scale_layout", _I32), ("global_scale", _F32)]


_NVFP4 = ctypes.POINTER(Nvfp4)
_SIGNATURES.update({
    "kestrel_quantize_nvfp4": [_P, _I32, _NVFP4, _P],
    "kestrel_dequantize_nvfp4": [_NVFP4, _P, _I32, _P],
    "kestrel_gemm_nvfp4": [_NVFP4, _NVFP4, _P, _I32, _P],
    "kestrel_dual_gemm_nvfp4": [_NVFP4, _NVFP4, _NVFP4, _P, _I32, _P],
    "kestrel_pack_gemm_weights": [_NVFP4, _P, _I64, _P],
    "kestrel_gemm_nvfp4_packed": [_NVFP4, _P, _F32, _I64, _P, _I32, _P],
    "kestrel_dual_gemm_nvfp4_packed": [_NVFP4, _P, _F32, _P, _F32, _I64, _P, _I32, _P],
    "kestrel_grouped_gemm_nvfp4": [_NVFP4, _NVFP4, _NVFP4, _P, _I64, _P, _I32, _P],
    "kestrel_grouped_gemm_nvfp4_packed": [_NVFP4, _P, _F32, _P, _F32, _I64, _P, _I64, _P, _I32,
                                          _P],
    "kestrel_fp8_gemm_add": [_P, _P, _F32, _P, _P, _I64, _I64, _I64, _I64, _P],
    "kestrel_fp8_gemm_add_scaled": [_P, _P, _P, _P, _P, _P, _I64, _I64, _I64, _I64, _P],
})
_SIZES = {
    "kestrel_blocked_scale_bytes": [_I64, _I64, _I64],
    "kestrel_gemm_packed_weight_bytes": [_I64, _I64, _I64],
}


class KestrelLib:
    def __init__(self, path):
        self._lib = ctypes.CDLL(path)
        self._lib.kestrel_last_error.restype = ctypes.c_char_p
        for name, args in _SIGNATURES.items():
            getattr(self._lib, name).argtypes = args
            getattr(self._lib, name).restype = ctypes.c_int
        for name, args in _SIZES.items():
            getattr(self._lib, name).argtypes = args
            getattr(self._lib, name).restype = ctypes.c_int64

    def size(self, name, *args):
        return getattr(self._lib, name)(*args)

    def call(self, name, *args):
        rc = getattr(self._lib, name)(*args, torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"{name}: {self._lib.kestrel_last_error().decode()}")


def _ptr(t):
    return None if t is None else t.data_ptr()


def kestrel_case(lib, op, p, inp):
    """(fn, out): fn() runs `op` on the case's inputs (torch_peers.make_inputs)
    into outputs allocated here, written as Kestrel's bench writes them
    (rmsnorm_fwd with rstd unless rstd=no, rmsnorm_bwd's dweight in fp32); out
    is the output torch's call returns first (y, loss, dx or dlogits)."""
    m, n = int(p["m"]), int(p["n"])
    if op in ("cross_entropy_fwd", "cross_entropy_bwd"):
        logits, target = inp["logits"], inp["target"]
        dt, dev = _DTYPE[logits.dtype], logits.device
        red, ls = p.get("reduction", "mean"), float(p.get("smoothing", 0.0))
        loss = torch.empty(m if red == "none" else 1, device=dev)
        lse, total = torch.empty(m, device=dev), torch.empty(1, device=dev)
        # The lambdas hold the tensors themselves, not their addresses: a
        # tensor nothing references goes back to torch's allocator.
        tw = total if red == "mean" else None
        fwd = lambda: lib.call("kestrel_cross_entropy_fwd", _ptr(logits), _ptr(target), _ptr(loss),
                               _ptr(lse), _ptr(tw), m, n, dt, -100, ls, _REDUCTION[red])
        if op == "cross_entropy_fwd":
            return fwd, loss
        fwd()
        dloss, dlogits = torch.full_like(loss, 0.75), torch.empty_like(logits)
        return (lambda: lib.call("kestrel_cross_entropy_bwd", _ptr(dloss), _ptr(logits), _ptr(target),
                                 _ptr(lse), _ptr(tw), _ptr(dlogits), m, n, dt, -100, ls,
                                 _REDUCTION[red])), dlogits
    x = inp["x"]
    dt = _DTYPE[x.dtype]
    w = inp.get("w")
    if op == "softmax_fwd":
        y = torch.empty_like(x)
        return (lambda: lib.call("kestrel_softmax_fwd", _ptr(x), _ptr(y), m, n, dt)), y
    if op == "softmax_bwd":
        y, dx = torch.empty_like(x), torch.empty_like(x)
        lib.call("kestrel_softmax_fwd", _ptr(x), _ptr(y), m, n, dt)
        return (lambda: lib.call("kestrel_softmax_bwd", _ptr(inp["dy"]), _ptr(y), _ptr(dx), m, n,
                                 dt)), dx
    rstd = torch.empty(m, device=x.device)
    y = torch.empty_like(x)
    if op == "rmsnorm_fwd":
        r = inp.get("r")
        h = None if r is None else torch.empty_like(x)
        keep = rstd if p.get("rstd", "yes") == "yes" else None
        return (lambda: lib.call("kestrel_rmsnorm_fwd", _ptr(x), _ptr(r), _ptr(w), dt, _ptr(y),
                                 _ptr(h), _ptr(keep), m, n, dt, 1e-6)), y
    # rmsnorm_bwd: rstd from Kestrel's forward.
    lib.call("kestrel_rmsnorm_fwd", _ptr(x), None, _ptr(w), dt, _ptr(y), None, _ptr(rstd), m, n, dt,
             1e-6)
    dx = torch.empty_like(x)
    dw = None if w is None else torch.empty(n, device=x.device)
    return (lambda: lib.call("kestrel_rmsnorm_bwd", _ptr(inp["dy"]), _ptr(x), _ptr(w), dt,
                             _ptr(rstd), _ptr(dx), _ptr(dw), 0, m, n, dt)), dx


class Nvfp4Tensor:
    """An NVFP4 tensor held in torch uint8 buffers: values [L][rows][k/2]
    (two e2m1 codes a byte), e4m3 scales ([L][rows][k/16], or the blocked
    layout's bytes), and the fp32 global scale."""

    def __init__(self, values, scales, batches, rows, k, blocked, global_scale):
        self.values, self.scales = values, scales
        self.batches, self.rows, self.k = batches, rows, k
        self.blocked, self.global_scale = blocked, global_scale

    def c(self):
        return Nvfp4(self.values.data_ptr(), self.scales.data_ptr(), self.batches, self.rows, self.k,
                     1 if self.blocked else 0, self.global_scale)


def quantize(lib, x, global_scale=1.0, blocked=False):
    """x ([L][rows][k] or [rows][k], k % 16 == 0) -> Nvfp4Tensor (batched:
    the GEMMs' outputs are [L][M][N] either way)."""
    x3 = x.contiguous() if x.dim() == 3 else x.contiguous().unsqueeze(0)
    batches, rows, k = x3.shape
    values = torch.empty(batches, rows, k // 2, dtype=torch.uint8, device=x.device)
    scales = (torch.empty(lib.size("kestrel_blocked_scale_bytes", rows, k, batches),
                          dtype=torch.uint8, device=x.device) if blocked else
              torch.empty(batches, rows, k // 16, dtype=torch.uint8, device=x.device))
    t = Nvfp4Tensor(values, scales, batches, rows, k, blocked, global_scale)
    lib.call("kestrel_quantize_nvfp4", x3.data_ptr(), _DTYPE[x.dtype], ctypes.byref(t.c()))
    return t


def dequantize(lib, t, dtype=torch.float32):
    y = torch.empty(t.batches, t.rows, t.k, dtype=dtype, device=t.values.device)
    lib.call("kestrel_dequantize_nvfp4", ctypes.byref(t.c()), y.data_ptr(), _DTYPE[dtype])
    return y


class PackedWeights:
    """Weights packed once for the GEMMs (gemm.h, pack_gemm_weights): one
    torch uint8 buffer, the shape it came from and its global scale."""

    def __init__(self, buffer, batches, rows, k, global_scale):
        self.buffer, self.batches, self.rows, self.k = buffer, batches, rows, k
        self.global_scale = global_scale


def pack_weights(lib, w):
    """w (an Nvfp4Tensor of weights) -> PackedWeights; the GEMMs then give
    the same results, bit for bit, in less time at M = 16..256."""
    n = lib.size("kestrel_gemm_packed_weight_bytes", w.rows, w.k, w.batches)
    buf = torch.empty(n, dtype=torch.uint8, device=w.values.device)
    lib.call("kestrel_pack_gemm_weights", ctypes.byref(w.c()), buf.data_ptr(), n)
    return PackedWeights(buf, w.batches, w.rows, w.k, w.global_scale)


def _out(a, n, out_dtype):
    return torch.empty(a.batches, a.rows, n, dtype=out_dtype, device=a.values.device)


def gemm(lib, a, b, out_dtype=torch.bfloat16):
    """c[l][m][n] = sum_k a[l][m][k] b[l][n][k] (times both global scales);
    b an Nvfp4Tensor or PackedWeights."""
    c = _out(a, b.rows, out_dtype)
    if isinstance(b, PackedWeights):
        lib.call("kestrel_gemm_nvfp4_packed", ctypes.byref(a.c()), b.buffer.data_ptr(),
                 b.global_scale, b.rows, c.data_ptr(), _DTYPE[out_dtype])
    else:
        lib.call("kestrel_gemm_nvfp4", ctypes.byref(a.c()), ctypes.byref(b.c()), c.data_ptr(),
                 _DTYPE[out_dtype])
    return c


def dual_gemm(lib, a, b1, b2, out_dtype=torch.bfloat16):
    """c = silu(a b1^T) * (a b2^T), the SwiGLU up-projection, fused; b1 and
    b2 both Nvfp4Tensors or both PackedWeights."""
    c = _out(a, b1.rows, out_dtype)
    if isinstance(b1, PackedWeights):
        lib.call("kestrel_dual_gemm_nvfp4_packed", ctypes.byref(a.c()), b1.buffer.data_ptr(),
                 b1.global_scale, b2.buffer.data_ptr(), b2.global_scale, b1.rows, c.data_ptr(),
                 _DTYPE[out_dtype])
    else:
        lib.call("kestrel_dual_gemm_nvfp4", ctypes.byref(a.c()), ctypes.byref(b1.c()),
                 ctypes.byref(b2.c()), c.data_ptr(), _DTYPE[out_dtype])
    return c


def grouped_gemm(lib, a, b, ends, b2=None, out_dtype=torch.bfloat16):
    """Mixture-of-experts: a (one batch of M rows, the groups' rows one after
    another), b one weight per group (batches = groups), ends a CUDA int32
    tensor of the groups' row ends: c[r] = a[r] b[g]^T for r in group g, or
    with b2 silu(a[r] b[g]^T) * (a[r] b2[g]^T). b (and b2) Nvfp4Tensors or
    PackedWeights."""
    c = torch.empty(a.rows, b.rows, dtype=out_dtype, device=a.values.device)
    groups = ends.numel()
    if isinstance(b, PackedWeights):
        lib.call("kestrel_grouped_gemm_nvfp4_packed", ctypes.byref(a.c()), b.buffer.data_ptr(),
                 b.global_scale, b2.buffer.data_ptr() if b2 else None,
                 b2.global_scale if b2 else 0.0, b.rows, ends.data_ptr(), groups, c.data_ptr(),
                 _DTYPE[out_dtype])
    else:
        lib.call("kestrel_grouped_gemm_nvfp4", ctypes.byref(a.c()), ctypes.byref(b.c()),
                 ctypes.byref(b2.c()) if b2 else None, ends.data_ptr(), groups, c.data_ptr(),
                 _DTYPE[out_dtype])
    return c


def fp8_gemm_add(lib, a, b, alpha=1.0, r=None, scale_a=None, scale_b=None):
    """d = bf16(bf16(alpha a b^T) + r): a [L][M][K] (or [M][K]) and b [L][N][K]
    torch.float8_e4m3fn, r bf16 [L][M][N] or None (no add); d is a new
    tensor (the C call itself also takes r == d, an in-place add).
    scale_a / scale_b: one-element fp32 CUDA tensors (torch._scaled_mm's),
    read by the kernel, for alpha = scale_a * scale_b (None: 1; alpha must
    then be left at 1)."""
    scaled = scale_a is not None or scale_b is not None
    if scaled and alpha != 1.0:
        raise ValueError("fp8_gemm_add: alpha with device scales; give one or the other")
    squeeze = a.dim() == 2
    # (Held in names: a temporary's memory would go back to torch's
    # allocator before the call.)
    a3, b3 = (a[None], b[None]) if squeeze else (a, b)
    a3, b3 = a3.contiguous(), b3.contiguous()
    batches, m, k = a3.shape
    n = b3.shape[1]
    d = torch.empty(batches, m, n, dtype=torch.bfloat16, device=a.device)
    r3 = None if r is None else (r[None] if squeeze else r).contiguous()
    if scaled:
        sa, sb = (None if s is None else s.to(torch.float32).contiguous()
                  for s in (scale_a, scale_b))
        lib.call("kestrel_fp8_gemm_add_scaled", a3.data_ptr(), b3.data_ptr(), _ptr(sa), _ptr(sb),
                 _ptr(r3), d.data_ptr(), batches, m, n, k)
    else:
        lib.call("kestrel_fp8_gemm_add", a3.data_ptr(), b3.data_ptr(), float(alpha), _ptr(r3),
                 d.data_ptr(), batches, m, n, k)
    return d[0] if squeeze else d
