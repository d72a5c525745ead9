#!/usr/bin/env python3
"""Joins a `kestrel bench --suite S --json K.json` run with the torch peers of
the same suite (`scripts/torch_peers.py --suite S --json T.json`, one or more
files) into one markdown table: Kestrel time, % SOL and its harness's stream
peer (the op's tensors moved with no arithmetic) beside torch eager,
torch.compile and the torch harness's copy,
and the cases where Kestrel is not faster than torch.compile. Where the torch
file also timed Kestrel (`torch_peers.py --kestrel`: the same tensors,
interleaved with torch.compile) that ratio gets its own column and decides the
list: it is the comparison that neither machine drift nor the two harnesses
separate.

    python3 scripts/peer_table.py --suite bench/suites/rowwise.json \\
        --kestrel rowwise.json --torch torch_fwd.json torch_bwd.json
"""
import argparse
import json


def key(op, params):
    return op, json.dumps(params, sort_keys=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", required=True)
    ap.add_argument("--kestrel", required=True)
    ap.add_argument("--torch", nargs="+", required=True)
    args = ap.parse_args()

    cases = json.load(open(args.suite))["cases"]
    results = json.load(open(args.kestrel))["results"]
    if len(results) != len(cases):  # kestrel writes one result per case, in suite order
        raise SystemExit(f"{args.kestrel}: {len(results)} results for {len(cases)} cases of {args.suite}")
    torch_rows = {}
    for path in args.torch:
        for row in json.load(open(path))["rows"]:
            torch_rows[key(row["op"], row["params"])] = row

    print("| case | Kestrel µs | % SOL | stream µs | torch eager µs | torch.compile µs | torch copy µs "
          "| vs compile | interleaved: Kestrel µs | vs compile |")
    print("|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    slower = []
    for case, res in zip(cases, results):
        if res["op"] != case["op"]:
            raise SystemExit(f"result {res['op']} {res['shape']} does not match case {case['op']}")
        row = torch_rows.get(key(case["op"], case["params"]))
        if row is None:
            continue
        ours, eager, comp = res.get("time_us"), row.get("eager_us"), row.get("compile_us")
        stream = next((p["time_us"] for p in res.get("peers", []) if p["name"] == "stream"), None)
        fmt = lambda v: ("-" if not v else f"{v:.4g}" if v < 1000 else f"{v:.0f}")
        ratio = comp / ours if ours and comp else None
        inter = row.get("kestrel_us")
        inter_ratio = comp / inter if inter and comp else None
        print(f"| {row['label']} | {fmt(ours)} | {100 * res.get('sol_fraction', 0):.1f}% | {fmt(stream)} | "
              f"{fmt(eager)} | {fmt(comp)} | {fmt(row.get('copy_us'))} | "
              f"{f'{ratio:.2f}×' if ratio else '-'} | {fmt(inter)} | "
              f"{f'{inter_ratio:.3f}×' if inter_ratio else '-'} |")
        decisive = inter_ratio if inter_ratio is not None else ratio
        if decisive is not None and decisive <= 1.0:
            slower.append(f"{row['label']} ({decisive:.3f}×)")
    print()
    print("Not faster than torch.compile: " + (", ".join(slower) if slower else "none") + ".")


if __name__ == "__main__":
    main()
