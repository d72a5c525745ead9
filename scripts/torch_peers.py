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

    python3 scripts/torch_peers.py [--suite bench/suites/rowwise.json]
        [--json out.json] [--markdown out.md] [--runs 30] [--no-compile]
        [--ops rmsnorm_fwd,softmax_fwd] [--max-gib 40]
"""
import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F

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


def make_case(op, p, device, compile_it):
    """Returns (fn, bytes): fn() runs the op once; bytes as Kestrel counts them.
    compile_it: the forward formula goes through torch.compile; a backward op
    then times the compiled graph's backward (AOTAutograd) through autograd."""
    m, n = int(p["m"]), int(p["n"])
    dt = DTYPES[p.get("dtype", "bf16")]
    es = torch.tensor([], dtype=dt).element_size()
    row = m * n * es
    gen = torch.Generator(device=device).manual_seed(1)
    rand = lambda *s, scale=1.0: (torch.randn(*s, device=device, generator=gen) * scale).to(dt)
    weighted = p.get("weight", "yes") == "yes"
    wrap = (lambda f: torch.compile(f, dynamic=False)) if compile_it else (lambda f: f)
    if op == "rmsnorm_fwd":
        x, w = rand(m, n), rand(n, scale=0.5) if weighted else None
        # Kestrel's forward writes rstd[M] (4 bytes a row) unless the case
        # asks for the inference form (rstd=no). torch's returns y only; it
        # saves rstd for the backward when its inputs require grad: the
        # training forward, which is then the peer (session 21: the inference
        # form had been timed against Kestrel's rstd store).
        with_rstd = p.get("rstd", "yes") == "yes"
        wbytes = (n * es if weighted else 0) + (4 * m if with_rstd else 0)
        if with_rstd:
            for t in (x, w):
                if t is not None:
                    t.requires_grad_()
        if p.get("residual", "no") == "yes":
            r, f = rand(m, n).requires_grad_(with_rstd), wrap(rmsnorm_residual)
            return (lambda: f(x, r, w, 1e-6)), 4 * row + wbytes
        f = wrap(rmsnorm)
        return (lambda: f(x, w, 1e-6)), 2 * row + wbytes
    if op == "rmsnorm_bwd":
        x, dy = rand(m, n).requires_grad_(), rand(m, n)
        w = rand(n, scale=0.5).requires_grad_() if weighted else None
        y = wrap(rmsnorm)(x, w, 1e-6)
        inputs = [x, w] if weighted else [x]
        fn = lambda: torch.autograd.grad(y, inputs, dy, retain_graph=True)
        return fn, 3 * row + 4 * m + (n * (es + 4) if weighted else 0)
    if op == "softmax_fwd":
        x, f = rand(m, n, scale=3.0), wrap(softmax)
        return (lambda: f(x)), 2 * row
    if op == "softmax_bwd":
        x, dy = rand(m, n, scale=3.0).requires_grad_(), rand(m, n)
        y = wrap(softmax)(x)
        return (lambda: torch.autograd.grad(y, x, dy, retain_graph=True)), 3 * row
    if op in ("cross_entropy_fwd", "cross_entropy_bwd"):
        red = p.get("reduction", "mean")
        ls = float(p.get("smoothing", 0.0))
        logits = rand(m, n, scale=2.0)
        target = torch.randint(0, n, (m,), device=device, generator=gen)
        target[15::16] = -100
        loss_len = m if red == "none" else 1
        f = wrap(cross_entropy)
        if op == "cross_entropy_fwd":
            return (lambda: f(logits, target, red, ls)), row + 12 * m + 4 * loss_len
        logits.requires_grad_()
        loss = f(logits, target, red, ls)
        g = torch.full_like(loss, 0.75)
        fn = lambda: torch.autograd.grad(loss, logits, g, retain_graph=True)
        return fn, 2 * row + 12 * m + 4 * loss_len
    return None, 0


def time_us(fn, runs, flush):
    for _ in range(3):
        fn()
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
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="bench/suites/rowwise.json")
    ap.add_argument("--json", default="torch_peers.json")
    ap.add_argument("--markdown", default="torch_peers.md")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--ops", default="")
    ap.add_argument("--max-gib", type=float, default=40.0, help="skip cases moving more than this")
    args = ap.parse_args()

    device = torch.device("cuda")
    # Every case is a new shape of the same few functions: let dynamo keep
    # them all instead of falling back to eager after 8 recompilations.
    torch._dynamo.config.cache_size_limit = 4096
    torch._dynamo.config.accumulated_cache_size_limit = 4096
    flush = torch.zeros(64 << 20, dtype=torch.float32, device=device)  # 256 MiB
    suite = json.load(open(args.suite))
    only = set(filter(None, args.ops.split(",")))
    rows = []
    for case in suite["cases"]:
        op, p = case["op"], case["params"]
        if (only and op not in only) or op not in ROW_OPS:
            continue  # e.g. the GEMV cases of a mixed suite: their peer is cuBLAS
        label = f'{op} {p["m"]}x{p["n"]} {p.get("dtype", "bf16")}' + "".join(
            f" {k}={v}" for k, v in p.items() if k not in ("m", "n", "dtype"))
        row = {"op": op, "params": p, "label": label}
        nbytes = 0
        for mode in ["eager"] + ([] if args.no_compile else ["compile"]):
            try:
                fn, nbytes = make_case(op, p, device, mode == "compile")
                if fn is None:
                    break
                row["bytes"] = nbytes
                if nbytes > args.max_gib * (1 << 30):
                    row["note"] = "skipped: over --max-gib"
                    break
                row[mode + "_us"] = time_us(fn, args.runs, flush)
            except torch.cuda.OutOfMemoryError:
                row["note"] = f"{mode}: out of memory"
            except Exception as e:  # a failure is a result, not an abort
                row["note"] = f"{mode}: {type(e).__name__}: {e}"[:200]
            finally:
                fn = None
                torch.cuda.empty_cache()
        if "bytes" not in row:
            continue
        if "note" not in row:
            # The harness's own yardstick: a device copy of the same bytes
            # (half read, half written), timed the same way. Kestrel's % SOL is
            # against its copy peer, timed by its own harness.
            src = torch.empty(nbytes // 2, dtype=torch.uint8, device=device)
            dst = torch.empty_like(src)
            row["copy_us"] = time_us(lambda: dst.copy_(src), args.runs, flush)
            src = dst = None
            torch.cuda.empty_cache()
        rows.append(row)
        tbs = lambda us: nbytes / us / 1e6 if us else float("nan")
        print(f'{label:60s} eager {row.get("eager_us", math.nan):9.1f} us ({tbs(row.get("eager_us")):.2f} TB/s)'
              f'  compile {row.get("compile_us", math.nan):9.1f} us  copy {row.get("copy_us", math.nan):9.1f} us'
              f'  {row.get("note", "")}', flush=True)

    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": args.runs,
            "timing": "median of CUDA-event timings, 256 MiB L2 flush (read) before each call"}
    json.dump({"meta": meta, "rows": rows}, open(args.json, "w"), indent=1)
    with open(args.markdown, "w") as f:
        f.write(f'# torch peers: {meta["gpu"]}, torch {meta["torch"]}\n\n{meta["timing"]}.\n\n')
        f.write("| case | eager µs | eager TB/s | compile µs | compile TB/s | note |\n|---|---|---|---|---|---|\n")
        for r in rows:
            e, c, b = r.get("eager_us"), r.get("compile_us"), r.get("bytes", 0)
            fmt = lambda us: f"{us:.1f}" if us else ""
            rate = lambda us: f"{b / us / 1e6:.2f}" if us else ""
            f.write(f'| {r["label"]} | {fmt(e)} | {rate(e)} | {fmt(c)} | {rate(c)} | {r.get("note", "")} |\n')
    print(f"wrote {args.json} and {args.markdown}", file=sys.stderr)


if __name__ == "__main__":
    main()
