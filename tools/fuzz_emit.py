#!/usr/bin/env python3
"""Random graphs through `stc emit`, `make conform` and `make dfsim`: every project's C simulation must match
the reference, its stream accesses the network it was emitted from (stc conform), and its kernels run
concurrently at the emitted depths must complete.

  python3 tools/fuzz_emit.py FIRST_SEED END_SEED [--stc PATH] [--work DIR] [--settings] [--quant]

Each seed draws a chain of 2 to 7 steps over a [rows, width] tensor: matmuls (with bias, with a transposed
weight), unary ops, broadcast binary ops, row ops, transposes, slices, concatenations, reductions,
residual adds of an earlier tensor, attention blocks (reshape to heads, transpose, batched matmuls
with caches, softmax, back) and causal self-attention (K and V projected on chip, K transposed or read
with transpose_b, a causal softmax: the scores and P.V hold K and V). With --settings, each seed also draws a tile and an on-chip budget (several
fused groups). A failing seed prints its graph file and the last lines of the failure; passing projects
are deleted. Exits 1 when a seed fails.
"""
import argparse
import random
import os
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

dims = [1, 2, 3, 4, 5, 8, 12, 16, 24, 32, 40, 48, 64, 96]
def gen(seed):
    """The graph file of a seed (YAML text), or None when the draw made no op."""
    r = random.Random(seed)
    M = r.choice([1, 1, 2, 3, 4, 6, 8]); D = r.choice(dims[2:])
    lines = [f"graph: fz{seed}", f"inputs: [{{name: x, shape: [{M}, {D}]}}]", "weights:"]
    ws = []; ops = []
    cur, shape = "x", [M, D]
    hist = {(M, D): ["x"]}
    n = 0
    for k in range(r.randint(2, 7)):
        kind = r.choice(["matmul", "matmulb", "matmult", "unary", "binary", "row", "transpose", "slice", "concat", "reduce", "residual", "attention", "attention", "selfattention"])
        out = f"t{k}"
        if kind.startswith("matmul"):
            N = r.choice(dims[1:])
            K = shape[-1]
            if len(shape) != 2: continue
            w = f"w{k}"
            if kind == "matmult":
                ws.append(f"  - {{name: {w}, shape: [{N}, {K}]}}")
                ops.append(f"  - {{name: op{k}, op: matmul, inputs: [{cur}, {w}], output: {out}, transpose_b: 1}}")
            elif kind == "matmulb":
                ws.append(f"  - {{name: {w}, shape: [{K}, {N}]}}"); ws.append(f"  - {{name: b{k}, shape: [{N}]}}")
                ops.append(f"  - {{name: op{k}, op: matmul, inputs: [{cur}, {w}, b{k}], output: {out}}}")
            else:
                ws.append(f"  - {{name: {w}, shape: [{K}, {N}]}}")
                ops.append(f"  - {{name: op{k}, op: matmul, inputs: [{cur}, {w}], output: {out}}}")
            shape = [shape[0], N]
        elif kind == "unary":
            op = r.choice(["relu", "gelu", "silu", "exp", "tanh", "sigmoid"])
            ops.append(f"  - {{name: op{k}, op: {op}, inputs: [{cur}], output: {out}}}")
        elif kind == "binary":
            op = r.choice(["add", "sub", "mul"])
            w = f"v{k}"
            bshape = r.choice([[shape[-1]], [shape[0], 1], shape])
            ws.append(f"  - {{name: {w}, shape: {bshape}}}")
            ops.append(f"  - {{name: op{k}, op: {op}, inputs: [{cur}, {w}], output: {out}}}")
        elif kind == "row":
            op = r.choice(["softmax", "layernorm", "rmsnorm"])
            if op == "softmax":
                ops.append(f"  - {{name: op{k}, op: softmax, inputs: [{cur}], output: {out}, axis: -1}}")
            elif op == "layernorm":
                ws.append(f"  - {{name: g{k}, shape: [{shape[-1]}]}}"); ws.append(f"  - {{name: b{k}, shape: [{shape[-1]}]}}")
                ops.append(f"  - {{name: op{k}, op: layernorm, inputs: [{cur}, g{k}, b{k}], output: {out}}}")
            else:
                ws.append(f"  - {{name: g{k}, shape: [{shape[-1]}]}}")
                ops.append(f"  - {{name: op{k}, op: rmsnorm, inputs: [{cur}, g{k}], output: {out}}}")
        elif kind == "transpose":
            ops.append(f"  - {{name: op{k}, op: transpose, inputs: [{cur}], output: {out}, perm: [1, 0]}}")
            shape = [shape[1], shape[0]]
        elif kind == "slice":
            if shape[-1] < 2: continue
            a = r.randint(0, shape[-1] - 2); b = r.randint(a + 1, shape[-1])
            ops.append(f"  - {{name: op{k}, op: slice, inputs: [{cur}], output: {out}, axis: 1, start: {a}, end: {b}}}")
            shape = [shape[0], b - a]
        elif kind == "concat":
            ax = r.choice([0, 1])
            ops.append(f"  - {{name: op{k}, op: concat, inputs: [{cur}, {cur}], output: {out}, axis: {ax}}}")
            shape = [shape[0] * 2, shape[1]] if ax == 0 else [shape[0], shape[1] * 2]
        elif kind == "residual":
            if not hist.get(tuple(shape)): continue
            prev = r.choice(hist[tuple(shape)])
            ops.append(f"  - {{name: op{k}, op: add, inputs: [{cur}, {prev}], output: {out}}}")
        elif kind == "attention":
            S, Dm = shape
            H = r.choice([h for h in [1, 2, 3, 4] if Dm % h == 0]); dh = Dm // H
            C = r.choice([1, 3, 5, 8, 16])
            ws.append(f"  - {{name: wq{k}, shape: [{Dm}, {Dm}]}}")
            ws.append(f"  - {{name: kc{k}, shape: [{H}, {dh}, {C}]}}")
            ws.append(f"  - {{name: vc{k}, shape: [{H}, {C}, {dh}]}}")
            ops.append(f"  - {{name: q{k}, op: matmul, inputs: [{cur}, wq{k}], output: q{k}o}}")
            ops.append(f"  - {{name: r{k}, op: reshape, inputs: [q{k}o], output: r{k}o, shape: [{S}, {H}, {dh}]}}")
            ops.append(f"  - {{name: p{k}, op: transpose, inputs: [r{k}o], output: p{k}o, perm: [1, 0, 2]}}")
            ops.append(f"  - {{name: s{k}, op: matmul, inputs: [p{k}o, kc{k}], output: s{k}o}}")
            ops.append(f"  - {{name: m{k}, op: softmax, inputs: [s{k}o], output: m{k}o, axis: -1}}")
            ops.append(f"  - {{name: o{k}, op: matmul, inputs: [m{k}o, vc{k}], output: o{k}o}}")
            ops.append(f"  - {{name: b{k}t, op: transpose, inputs: [o{k}o], output: b{k}o, perm: [1, 0, 2]}}")
            ops.append(f"  - {{name: f{k}, op: reshape, inputs: [b{k}o], output: {out}, shape: [{S}, {Dm}]}}")
        elif kind == "selfattention":  # K and V made on chip, a causal softmax: the scores and P.V hold them
            if len(shape) != 2: continue
            S, Dm = shape
            H = r.choice([h for h in [1, 2, 3, 4] if Dm % h == 0]); dh = Dm // H
            tb = r.random() < 0.5
            for w in "qkv":
                ws.append(f"  - {{name: w{w}{k}, shape: [{Dm}, {Dm}]}}")
                ops.append(f"  - {{name: {w}{k}, op: matmul, inputs: [{cur}, w{w}{k}], output: {w}{k}o}}")
                ops.append(f"  - {{name: {w}r{k}, op: reshape, inputs: [{w}{k}o], output: {w}r{k}o, shape: [{S}, {H}, {dh}]}}")
                perm = "[1, 2, 0]" if w == "k" and not tb else "[1, 0, 2]"
                ops.append(f"  - {{name: {w}t{k}, op: transpose, inputs: [{w}r{k}o], output: {w}t{k}o, perm: {perm}}}")
            ops.append(f"  - {{name: s{k}, op: matmul, inputs: [qt{k}o, kt{k}o], output: s{k}o{', transpose_b: 1' if tb else ''}}}")
            scores = f"s{k}o"
            if r.random() < 0.5:
                ws.append(f"  - {{name: sc{k}, shape: [1]}}")
                ops.append(f"  - {{name: ss{k}, op: mul, inputs: [s{k}o, sc{k}], output: ss{k}o}}")
                scores = f"ss{k}o"
            ops.append(f"  - {{name: m{k}, op: softmax, inputs: [{scores}], output: m{k}o, axis: -1, causal: true}}")
            ops.append(f"  - {{name: o{k}, op: matmul, inputs: [m{k}o, vt{k}o], output: o{k}o}}")
            ops.append(f"  - {{name: b{k}t, op: transpose, inputs: [o{k}o], output: b{k}o, perm: [1, 0, 2]}}")
            ops.append(f"  - {{name: f{k}, op: reshape, inputs: [b{k}o], output: {out}, shape: [{S}, {Dm}]}}")
        elif kind == "reduce":
            op = r.choice(["reduce_sum", "reduce_max", "reduce_mean"])
            ops.append(f"  - {{name: op{k}, op: {op}, inputs: [{cur}], output: {out}, axis: -1}}")
            shape = [shape[0], 1]
        hist.setdefault(tuple(shape), []).append(out)
        cur = out
    if not ops: return None
    if not ws: lines[-1] = "weights: []"
    return "\n".join(lines + ws + ["ops:"] + ops + [f"outputs: [{cur}]"]) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("first", type=int)
    ap.add_argument("end", type=int)
    ap.add_argument("--stc", default=os.path.join(ROOT, "build", "tools", "stc", "stc"))
    ap.add_argument("--work", default="/tmp/stc_fuzz_emit")
    ap.add_argument("--settings", action="store_true", help="draw a tile and an on-chip budget per seed")
    ap.add_argument("--quant", action="store_true", help="emit W4A8 (csim must match the quantised reference bit for bit)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    bad = refused = 0
    for seed in range(args.first, args.end):
        g = gen(seed)
        if not g:
            continue
        path = os.path.join(args.work, f"g{seed}.yaml")
        with open(path, "w") as f:
            f.write(g)
        proj = os.path.join(args.work, f"p{seed}")
        cmd = [args.stc, "emit", path, "-o", proj, "--force"]
        if args.quant:
            cmd += ["--set", "quant=w4a8"]
        if args.settings:
            r = random.Random(seed * 7919)
            cmd += ["--set", f"tile={r.choice([2, 4, 8, 16, 32])}"]
            if r.random() < 0.5:
                cmd += ["--set", f"onchip_budget_bytes={r.choice([40000, 80000, 200000])}"]
        e = subprocess.run(cmd, capture_output=True, text=True)
        if e.returncode:
            out = (e.stdout + e.stderr).strip()
            if "on-chip budget" in out:  # a budget below one kernel's needs: refused by design
                continue
            if args.quant and "DMAs move whole bytes" in out:  # int4 tiles of an odd number of weights
                refused += 1
                continue
            print(f"seed {seed}: stc emit exited {e.returncode}: {out[-300:]} ({path})")
            bad += 1
            continue
        m = subprocess.run(["make", "-s", "-C", proj, "conform", "dfsim", "STC=" + os.path.abspath(args.stc)],
                           capture_output=True, text=True)
        if m.returncode:
            print(f"seed {seed}: make conform dfsim failed: {(m.stdout + m.stderr).strip()[-600:]} ({path})")
            bad += 1
        else:
            shutil.rmtree(proj)
            os.remove(path)
    print(f"{args.end - args.first} seeds, {bad} failed" + (f", {refused} refused (int4 tokens of odd size)" if refused else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
