"""Kestrel's row-wise ops on torch tensors, through the C ABI
(include/kestrel/c_api.h, build/libkestrel_c.so) and ctypes.

    lib = KestrelLib("build/libkestrel_c.so")
    fn, out = kestrel_case(lib, op, params, inputs)  # inputs: torch_peers.make_inputs
    fn()  # runs the op on torch's current stream; `out` holds its main output

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


class KestrelLib:
    def __init__(self, path):
        self._lib = ctypes.CDLL(path)
        self._lib.kestrel_last_error.restype = ctypes.c_char_p
        for name, args in _SIGNATURES.items():
            getattr(self._lib, name).argtypes = args
            getattr(self._lib, name).restype = ctypes.c_int

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
