"""Kestrel's NVFP4 quantization and GEMMs, and its FP8 GEMM + add, from Python (kestrel_ctypes.py, the
C ABI) against torch: random activations and weights quantized by Kestrel,
dequantized by Kestrel, and gemm / dual_gemm / grouped_gemm compared with float64 torch
matmuls of the dequantized values (what the GEMMs compute exactly, before the
fp32 accumulation and the bf16 output rounding). Needs a Hopper GPU.

    python3 scripts/nvfp4_torch_check.py [--lib build/libkestrel_c.so]

Prints one line per case and exits 1 if any case misses the rule
|c - ref| <= 2^-8 |ref| + 2^-12 rms(ref), or if the GEMMs on packed weights
(kestrel_pack_gemm_weights) differ from them in any bit (M = 1's gemm runs
the GEMV kernel on row-major weights: there the packed result meets the rule),
or if the FP8 GEMM's device scales give other bits than their host alpha.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kestrel_ctypes as kc  # noqa: E402


def worst(c, ref):
    """The largest error over its bound, and whether every element passes."""
    bound = ref.abs() * 2.0**-8 + ref.pow(2).mean().sqrt() * 2.0**-12
    err = (c.double() - ref).abs()
    return float((err / bound).max()), bool((err <= bound).all())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default="build/libkestrel_c.so")
    args = ap.parse_args()
    lib = kc.KestrelLib(args.lib)
    torch.manual_seed(0)
    ok = True
    # (L, M, N, K, weights in the blocked scale layout)
    for l, m, n, k, blocked in [(1, 1, 4096, 7168, False), (1, 77, 200, 512, True),
                                (2, 128, 4096, 2048, False), (1, 256, 3072, 4096, True)]:
        x = torch.randn(l, m, k, device="cuda", dtype=torch.bfloat16)
        w1 = torch.randn(l, n, k, device="cuda", dtype=torch.bfloat16) * 0.05
        w2 = torch.randn(l, n, k, device="cuda", dtype=torch.bfloat16) * 0.05
        a = kc.quantize(lib, x, global_scale=0.5)
        b1 = kc.quantize(lib, w1, global_scale=0.01, blocked=blocked)
        b2 = kc.quantize(lib, w2, global_scale=0.01, blocked=blocked)
        ad, b1d, b2d = (kc.dequantize(lib, t).double() for t in (a, b1, b2))
        g1, g2 = ad @ b1d.transpose(1, 2), ad @ b2d.transpose(1, 2)
        cases = [("gemm", kc.gemm(lib, a, b1), g1),
                 ("dual_gemm", kc.dual_gemm(lib, a, b1, b2), torch.nn.functional.silu(g1) * g2)]
        # Packed weights: the same results, bit for bit, where both run the
        # GEMM kernel (M = 1 on row-major weights runs the GEMV: within the bound).
        p1, p2 = kc.pack_weights(lib, b1), kc.pack_weights(lib, b2)
        packed = [kc.gemm(lib, a, p1), kc.dual_gemm(lib, a, p1, p2)]
        torch.cuda.synchronize()
        for (name, c, ref), cp in zip(cases, packed):
            ratio, passed = worst(c, ref)
            same = torch.equal(c, cp) if (m > 1 or name == "dual_gemm") else worst(cp, ref)[1]
            ok &= passed and same
            print(f"{name} L{l} M{m} N{n} K{k} {'blocked' if blocked else 'linear'} weights: "
                  f"{'PASS' if passed else 'FAIL'} (worst error {ratio:.3f} of its bound); "
                  f"packed weights {'agree' if same else 'DIFFER'}")
    # Grouped (mixture-of-experts): groups of 37, 0, 150 and 9 rows.
    rows, n, k = [37, 0, 150, 9], 256, 1024
    x = torch.randn(sum(rows), k, device="cuda", dtype=torch.bfloat16)
    w1 = torch.randn(len(rows), n, k, device="cuda", dtype=torch.bfloat16) * 0.05
    w2 = torch.randn(len(rows), n, k, device="cuda", dtype=torch.bfloat16) * 0.05
    a = kc.quantize(lib, x, global_scale=0.5)
    b1, b2 = (kc.quantize(lib, w, global_scale=0.01) for w in (w1, w2))
    ends = torch.tensor(rows, dtype=torch.int32).cumsum(0).to(torch.int32).cuda()
    ad, b1d, b2d = (kc.dequantize(lib, t).double() for t in (a, b1, b2))
    ad = ad[0]
    g1 = torch.cat([ad[e - r:e] @ b1d[g].T for g, (r, e) in enumerate(zip(rows, ends.tolist()))])
    g2 = torch.cat([ad[e - r:e] @ b2d[g].T for g, (r, e) in enumerate(zip(rows, ends.tolist()))])
    p1, p2 = kc.pack_weights(lib, b1), kc.pack_weights(lib, b2)
    for name, c, cp, ref in [
            ("grouped_gemm", kc.grouped_gemm(lib, a, b1, ends),
             kc.grouped_gemm(lib, a, p1, ends), g1),
            ("grouped dual_gemm", kc.grouped_gemm(lib, a, b1, ends, b2),
             kc.grouped_gemm(lib, a, p1, ends, p2), torch.nn.functional.silu(g1) * g2)]:
        ratio, passed = worst(c, ref)
        same = torch.equal(c, cp)
        ok &= passed and same
        print(f"{name} groups {rows} N{n} K{k}: {'PASS' if passed else 'FAIL'} (worst error "
              f"{ratio:.3f} of its bound); packed weights {'agree' if same else 'DIFFER'}")
    # FP8 GEMM + add against float64 and torch._scaled_mm (then + r), whose
    # cuBLASLt kernel sums e4m3 products as Kestrel's does.
    for m, n, k in [(80, 208, 512), (512, 1024, 4096)]:
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
        r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16) * 4
        alpha = 0.37
        d = kc.fp8_gemm_add(lib, a, b, alpha, r)
        exact = (a.double() @ b.double().T) * alpha
        ref = (exact.to(torch.bfloat16).double() + r.double()).to(torch.bfloat16).double()
        bound = 2.0**-7 * (exact.abs() + ref.abs()) + 2.0**-10 * alpha * (
            a.double().abs() @ b.double().abs().T) + 1e-6
        err = (d.double() - ref).abs()
        passed = bool((err <= bound).all())
        one = torch.ones((), device="cuda")
        peer = torch._scaled_mm(a, b.T, scale_a=one, scale_b=one * alpha,
                                out_dtype=torch.bfloat16) + r
        same = float((peer == d).double().mean())
        # The scales as torch passes them, read on the device: 0.5 * 0.74
        # is 0.37 in fp32, so the bits must be the host alpha's.
        sa = torch.full((), 0.5, device="cuda")
        sb = torch.full((), 0.74, device="cuda")
        scaled = kc.fp8_gemm_add(lib, a, b, r=r, scale_a=sa, scale_b=sb)
        scaled_same = torch.equal(scaled, d)
        ok &= passed and scaled_same
        print(f"fp8_gemm_add M{m} N{n} K{k}: {'PASS' if passed else 'FAIL'} (worst error "
              f"{float((err / bound).max()):.3f} of its bound); equal to torch._scaled_mm + r "
              f"on {100 * same:.2f}% of elements; device scales "
              f"{'give the same bits' if scaled_same else 'DIFFER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
