#!/usr/bin/env python3
"""Times the PyTorch peers of Kestrel's row-wise ops on the GPU machine.

For every case of a Kestrel suite (default bench/suites/rowwise.json) whose op
is rmsnorm_fwd/bwd, softmax_fwd/bwd or cross_entropy_fwd/bwd, times torch
eager and torch.compile on the same shapes and dtypes: median of CUDA-event
timings, L2 flushed (a 256 MiB read) before every timed call, the GPU held
busy while the host enqueues the call, warm-up excluded; and, as the
harness's yardstick, a device copy of the same bytes. Bytes are counted as
Kestrel counts them (inputs read once, outputs written once), so TB/s figures
compare directly with `kestrel bench`.

With --kestrel build/libkestrel_c.so it also times Kestrel itself, through
its C ABI (scripts/kestrel_ctypes.py), on tensors torch allocated, with the
same timing, in blocks alternating with torch.compile's: the same process,
allocator and minutes for both, so that neither the machine's drift nor the
buffers' placement separates them. Kestrel's output is checked against torch
eager's first.

    python3 scripts/torch_peers.py [--suite bench/suites/rowwise.json]
        [--json out.json] [--markdown out.md] [--runs 30] [--no-compile]
        [--ops rmsnorm_fwd,softmax_fwd] [--max-gib 40]
        [--kestrel build/libkestrel_c.so [--rounds 5]]
"""
import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F

import kestrel_ctypes

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
ROW_OPS = {"rmsnorm_fwd", "rmsnorm_bwd", "softmax_fwd", "softmax_bwd", "cross_entropy_fwd",
           "cross_entropy_bwd"}


def rmsnorm(x, w, eps):
    # What a PyTorch user runs (a fused kernel in eager mode since 2.4).
    return F.rms_norm(x, (x.shape[-1],), w, eps)


def rmsnorm_residual(x, r, w, eps):
    h = x + r
    return rmsnorm(h, w, eps), h


def softmax(x):
    return torch.softmax(x, -1)


def cross_entropy(logits, target, reduction, smoothing):
    return F.cross_entropy(logits, target, reduction=reduction, label_smoothing=smoothing)


def make_inputs(op, p, device):
    """The case's input tensors (the same values on every call) and its bytes
    as Kestrel counts them (inputs read once, outputs written once)."""
    m, n = int(p["m"]), int(p["n"])
    dt = DTYPES[p.get("dtype", "bf16")]
    es = torch.tensor([], dtype=dt).element_size()
    row = m * n * es
    gen = torch.Generator(device=device).manual_seed(1)
    rand = lambda *s, scale=1.0: (torch.randn(*s, device=device, generator=gen) * scale).to(dt)
    weighted = p.get("weight", "yes") == "yes"
    if op == "rmsnorm_fwd":
        # Kestrel's forward writes rstd[M] (4 bytes a row) unless the case
        # asks for the inference form (rstd=no).
        x, w = rand(m, n), rand(n, scale=0.5) if weighted else None
        wbytes = (n * es if weighted else 0) + (4 * m if p.get("rstd", "yes") == "yes" else 0)
        if p.get("residual", "no") == "yes":
            return {"x": x, "r": rand(m, n), "w": w}, 4 * row + wbytes
        return {"x": x, "w": w}, 2 * row + wbytes
    if op == "rmsnorm_bwd":
        x, dy = rand(m, n), rand(m, n)
        w = rand(n, scale=0.5) if weighted else None
        return {"x": x, "dy": dy, "w": w}, 3 * row + 4 * m + (n * (es + 4) if weighted else 0)
    if op == "softmax_fwd":
        return {"x": rand(m, n, scale=3.0)}, 2 * row
    if op == "softmax_bwd":
        return {"x": rand(m, n, scale=3.0), "dy": rand(m, n)}, 3 * row
    if op in ("cross_entropy_fwd", "cross_entropy_bwd"):
        logits = rand(m, n, scale=2.0)
        target = torch.randint(0, n, (m,), device=device, generator=gen)
        target[15::16] = -100
        loss_len = m if p.get("reduction", "mean") == "none" else 1
        reads = row + 12 * m + 4 * loss_len
        return {"logits": logits, "target": target}, reads + (row if op == "cross_entropy_bwd" else 0)
    return None, 0


def make_case(op, p, device, compile_it):
    """Returns (fn, bytes): fn() runs the op once in torch; bytes as Kestrel
    counts them. compile_it: the forward formula goes through torch.compile; a
    backward op then times the compiled graph's backward (AOTAutograd)
    through autograd."""
    inp, nbytes = make_inputs(op, p, device)
    if inp is None:
        return None, 0
    wrap = (lambda f: torch.compile(f, dynamic=False)) if compile_it else (lambda f: f)
    grad = lambda *ts: [t.requires_grad_() for t in ts if t is not None]
    if op == "rmsnorm_fwd":
        # torch's forward returns y only; it saves rstd for the backward when
        # its inputs require grad: the training forward, which is then the
        # peer of Kestrel's with rstd (session 21: the inference form had been
        # timed against Kestrel's rstd store).
        x, w = inp["x"], inp["w"]
        if p.get("rstd", "yes") == "yes":
            grad(x, w, inp.get("r"))
        if "r" in inp:
            f = wrap(rmsnorm_residual)
            return (lambda: f(x, inp["r"], w, 1e-6)), nbytes
        f = wrap(rmsnorm)
        return (lambda: f(x, w, 1e-6)), nbytes
    if op == "rmsnorm_bwd":
        x, w = inp["x"], inp["w"]
        grad(x, w)
        y = wrap(rmsnorm)(x, w, 1e-6)
        inputs = [x, w] if w is not None else [x]
        return (lambda: torch.autograd.grad(y, inputs, inp["dy"], retain_graph=True)), nbytes
    if op == "softmax_fwd":
        f = wrap(softmax)
        return (lambda: f(inp["x"])), nbytes
    if op == "softmax_bwd":
        x = inp["x"].requires_grad_()
        y = wrap(softmax)(x)
        return (lambda: torch.autograd.grad(y, x, inp["dy"], retain_graph=True)), nbytes
    red, ls = p.get("reduction", "mean"), float(p.get("smoothing", 0.0))
    f = wrap(cross_entropy)
    logits, target = inp["logits"], inp["target"]
    if op == "cross_entropy_fwd":
        return (lambda: f(logits, target, red, ls)), nbytes
    logits.requires_grad_()
    loss = f(logits, target, red, ls)
    g = torch.full_like(loss, 0.75)
    return (lambda: torch.autograd.grad(loss, logits, g, retain_graph=True)), nbytes


def samples_us(fn, runs, flush):
    times = []
    for _ in range(runs):
        flush.sum()  # a read: a memset would leave dirty lines for the timed call to write back
        # The GPU then waits ~0.5 ms while the host enqueues the call: the
        # events time the GPU's work, not dynamo's guards or the launch path
        # (torch.compile's short calls read 20.7 or 37.1 us in two runs of
        # session 19 without it). Kestrel's timer hides its host work the same
        # way, behind its flush.
        torch.cuda._sleep(1_000_000)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return times


def time_us(fn, runs, flush):
    for _ in range(3):
        fn()
    return statistics.median(samples_us(fn, runs, flush))


def time_interleaved_us(fns, runs, flush, rounds):
    """Medians of `runs` timings of each fn, taken in `rounds` alternating
    blocks, so that whatever drifts during the measurement (clocks, heat, the
    other process's leftovers) falls on every fn alike."""
    for fn in fns:
        for _ in range(3):
            fn()
    times = [[] for _ in fns]
    per_round = max(1, runs // rounds)
    for _ in range(rounds):
        for t, fn in zip(times, fns):
            t += samples_us(fn, per_round, flush)
    return [statistics.median(t) for t in times]


def first_tensor(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def check_kestrel(out, ref, dtype, label):
    """Kestrel's output against torch eager's on the same inputs: a guard that
    the ctypes call did the case's work, not a precision test (those are
    Kestrel's GPU tests, against float64)."""
    tol = 1e-4 if dtype == "fp32" else 3e-2
    if not torch.allclose(out.float(), ref.float(), rtol=tol, atol=tol, equal_nan=True):
        err = (out.float() - ref.float()).abs().max().item()
        raise RuntimeError(f"{label}: Kestrel's output differs from torch eager's (max |diff| {err:.3g})")


def run_case(op, p, device, args, flush, lib):
    """The row of one case: eager, then torch.compile (interleaved with Kestrel
    when lib is given), then a copy of the same bytes."""
    row = {}
    ref = None
    fn = fn_k = out_k = None
    try:
        fn, nbytes = make_case(op, p, device, False)
        if fn is None:
            return None
        row["bytes"] = nbytes
        if nbytes > args.max_gib * (1 << 30):
            row["note"] = "skipped: over --max-gib"
            return row
        row["eager_us"] = time_us(fn, args.runs, flush)
        if lib is not None:
            ref = first_tensor(fn()).detach()
        fn = None
        torch.cuda.empty_cache()
        if lib is not None:
            fn_k, out_k = kestrel_ctypes.kestrel_case(lib, op, p, make_inputs(op, p, device)[0])
        if args.no_compile:
            if fn_k is not None:
                row["kestrel_us"] = time_us(fn_k, args.runs, flush)
        else:
            fn, _ = make_case(op, p, device, True)
            if fn_k is None:
                row["compile_us"] = time_us(fn, args.runs, flush)
            else:
                row["kestrel_us"], row["compile_us"] = time_interleaved_us(
                    [fn_k, fn], args.runs, flush, args.rounds)
        if fn_k is not None:
            fn_k()
            check_kestrel(out_k, ref, p.get("dtype", "bf16"), op)
    except torch.cuda.OutOfMemoryError:
        row["note"] = "out of memory"
    except Exception as e:  # a failure is a result, not an abort
        row["note"] = f"{type(e).__name__}: {e}"[:200]
    finally:
        fn = fn_k = out_k = ref = None
        torch.cuda.empty_cache()
    if "note" not in row:
        # The harness's own yardstick: a device copy of the same bytes (half
        # read, half written), timed the same way. Kestrel's % SOL is against
        # its copy peer, timed by its own harness.
        src = torch.empty(row["bytes"] // 2, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        row["copy_us"] = time_us(lambda: dst.copy_(src), args.runs, flush)
        src = dst = None
        torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="bench/suites/rowwise.json")
    ap.add_argument("--json", default="torch_peers.json")
    ap.add_argument("--markdown", default="torch_peers.md")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--ops", default="")
    ap.add_argument("--max-gib", type=float, default=40.0, help="skip cases moving more than this")
    ap.add_argument("--kestrel", default="",
                    help="libkestrel_c.so: also time Kestrel on torch's tensors, interleaved "
                         "with torch.compile")
    ap.add_argument("--rounds", type=int, default=5,
                    help="with --kestrel: alternating blocks of runs/rounds timings each")
    args = ap.parse_args()

    device = torch.device("cuda")
    # Every case is a new shape of the same few functions: let dynamo keep
    # them all instead of falling back to eager after 8 recompilations.
    torch._dynamo.config.cache_size_limit = 4096
    torch._dynamo.config.accumulated_cache_size_limit = 4096
    flush = torch.zeros(64 << 20, dtype=torch.float32, device=device)  # 256 MiB
    lib = kestrel_ctypes.KestrelLib(args.kestrel) if args.kestrel else None
    suite = json.load(open(args.suite))
    only = set(filter(None, args.ops.split(",")))
    rows = []
    for case in suite["cases"]:
        op, p = case["op"], case["params"]
        if (only and op not in only) or op not in ROW_OPS:
            continue  # e.g. the GEMV cases of a mixed suite: their peer is cuBLAS
        label = f'{op} {p["m"]}x{p["n"]} {p.get("dtype", "bf16")}' + "".join(
            f" {k}={v}" for k, v in p.items() if k not in ("m", "n", "dtype"))
        row = run_case(op, p, device, args, flush, lib)
        if row is None:
            continue
        row.update({"op": op, "params": p, "label": label})
        rows.append(row)
        nbytes = row["bytes"]
        tbs = lambda us: nbytes / us / 1e6 if us else float("nan")
        vs = row["compile_us"] / row["kestrel_us"] if "kestrel_us" in row and "compile_us" in row else None
        print(f'{label:60s} eager {row.get("eager_us", math.nan):9.1f} us ({tbs(row.get("eager_us")):.2f} TB/s)'
              f'  compile {row.get("compile_us", math.nan):9.1f} us'
              + (f'  kestrel {row["kestrel_us"]:9.2f} us ({vs:.3f}x)' if vs else "")
              + f'  copy {row.get("copy_us", math.nan):9.1f} us  {row.get("note", "")}', flush=True)

    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": args.runs,
            "timing": "median of CUDA-event timings, 256 MiB L2 flush (read) before each call"
                      + (f"; Kestrel through {args.kestrel} on torch's tensors, interleaved with "
                         f"torch.compile in {args.rounds} rounds" if lib else "")}
    json.dump({"meta": meta, "rows": rows}, open(args.json, "w"), indent=1)
    with open(args.markdown, "w") as f:
        f.write(f'# torch peers: {meta["gpu"]}, torch {meta["torch"]}\n\n{meta["timing"]}.\n\n')
        kcols = " kestrel µs | compile / kestrel |" if lib else ""
        f.write(f"| case | eager µs | eager TB/s | compile µs | compile TB/s |{kcols} note |\n"
                f"|---|---|---|---|---|{'---|---|' if lib else ''}---|\n")
        for r in rows:
            e, c, b = r.get("eager_us"), r.get("compile_us"), r.get("bytes", 0)
            fmt = lambda us: f"{us:.1f}" if us else ""
            rate = lambda us: f"{b / us / 1e6:.2f}" if us else ""
            k = r.get("kestrel_us")
            kcells = (f" {k:.2f} | {c / k:.3f}x |" if k and c else " | |") if lib else ""
            f.write(f'| {r["label"]} | {fmt(e)} | {rate(e)} | {fmt(c)} | {rate(c)} |{kcells} {r.get("note", "")} |\n')
    print(f"wrote {args.json} and {args.markdown}", file=sys.stderr)


if __name__ == "__main__":
    main()
