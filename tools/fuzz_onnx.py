#!/usr/bin/env python3
"""Mutated ONNX models through `stc compile`: each must compile (exit 0) or stop with a message naming the
file (exit 1); never a crash, an internal error or a hang.

  /usr/bin/python3 tools/fuzz_onnx.py SEED COUNT [--stc PATH] [--work DIR] [--timeout S]

Each case takes a model of models/onnx and changes one to three things in it: drops or renames a node's
input, swaps two, deletes a node, changes its op or an attribute (a value, or a list's length), truncates
or reshapes an initializer, changes its type or an int64 value (a shape's), a graph input's dimension (to
0, 1, 2^31, a symbol) or the output's name; one case in twenty is the serialised model cut short. Models
with a dynamic `seq` are compiled with it free or fixed (at 8, 1, or 100,000). A failing case is kept as
DIR/failN.onnx and printed with the command. Exits 1 when a case fails. (Debian's python3-onnx.)
"""
import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INT_VALUES = [-9, -5, -1, 0, 1, 2, 3, 5, 7, 99, 2**33, 2**40]


def mutate(m, rng):
    """One change to model m, at random."""
    g = m.graph
    nodes = list(g.node)
    inits = list(g.initializer)
    kind = rng.randrange(14)
    if kind == 0 and nodes:  # a node's input dropped, or renamed to a value nothing makes
        n = rng.choice(nodes)
        if n.input:
            i = rng.randrange(len(n.input))
            if rng.random() < 0.5:
                del n.input[i]
            else:
                n.input[i] = "no_such_value"
    elif kind == 1 and nodes:  # two inputs swapped
        n = rng.choice(nodes)
        if len(n.input) >= 2:
            i, j = rng.sample(range(len(n.input)), 2)
            n.input[i], n.input[j] = n.input[j], n.input[i]
    elif kind == 2 and nodes:  # a node deleted
        g.node.remove(rng.choice(nodes))
    elif kind == 3 and nodes:  # another op
        rng.choice(nodes).op_type = rng.choice(["Relu", "Add", "MatMul", "Reshape", "Transpose", "Softmax",
                                                "Concat", "Where", "Expand", "Range", "NoSuchOp"])
    elif kind == 4 and nodes:  # an int attribute, or an element or the length of an ints attribute
        attrs = [a for n in nodes for a in n.attribute if a.type in (onnx.AttributeProto.INT,
                                                                     onnx.AttributeProto.INTS)]
        if attrs:
            a = rng.choice(attrs)
            if a.type == onnx.AttributeProto.INT:
                a.i = rng.choice(INT_VALUES)
            elif a.ints and rng.random() < 0.5:
                a.ints[rng.randrange(len(a.ints))] = rng.choice(INT_VALUES)
            elif a.ints and rng.random() < 0.5:
                del a.ints[-1]
            else:
                a.ints.append(rng.choice(INT_VALUES[:10]))
    elif kind == 5 and inits:  # data cut short
        t = rng.choice(inits)
        if t.raw_data:
            t.raw_data = t.raw_data[: len(t.raw_data) // 2 + 1]
        elif t.int64_data:
            del t.int64_data[-1]
        elif t.float_data:
            del t.float_data[-1]
    elif kind == 6 and inits:  # a dimension changed under the same data
        t = rng.choice(inits)
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 3, 1000000])
    elif kind == 7 and inits:  # another element type under the same bytes
        rng.choice(inits).data_type = rng.choice([TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32,
                                                  TensorProto.BOOL, TensorProto.DOUBLE, TensorProto.FLOAT16,
                                                  TensorProto.STRING])
    elif kind == 8:  # an int64 value of an initializer or a Constant (a shape, an axis, a start)
        tensors = [t for t in inits if t.data_type == TensorProto.INT64]
        tensors += [a.t for n in nodes if n.op_type == "Constant" for a in n.attribute
                    if a.name == "value" and a.t.data_type == TensorProto.INT64]
        if tensors:
            t = rng.choice(tensors)
            try:
                values = onnx.numpy_helper.to_array(t).copy()
            except ValueError:  # data already cut short
                return
            if values.size:
                values.flat[rng.randrange(values.size)] = rng.choice(INT_VALUES)
                t.CopyFrom(onnx.numpy_helper.from_array(values.astype(np.int64), t.name))
    elif kind in (9, 10) and g.input:  # a graph input's dimension
        dims = rng.choice(list(g.input)).type.tensor_type.shape.dim
        if dims:
            d = dims[rng.randrange(len(dims))]
            if kind == 9:
                d.dim_value = rng.choice([0, 1, 2, 5, 33, 2**31, 2**32])
            else:
                d.dim_param = rng.choice(["seq", "zz", "batch"])
    elif kind == 11 and g.output:  # the output named after another value, or none
        g.output[0].name = rng.choice(["no_such_value", nodes[-1].output[0] if nodes else "x"])
    elif kind == 12 and nodes:  # a node's output renamed (what reads it no longer finds it)
        n = rng.choice(nodes)
        if n.output:
            n.output[0] = n.output[0] + "_renamed"
    elif kind == 13 and nodes:  # an attribute dropped
        n = rng.choice(nodes)
        if n.attribute:
            del n.attribute[rng.randrange(len(n.attribute))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("seed", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("--stc", default=os.path.join(ROOT, "build", "tools", "stc", "stc"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="stc-fuzz-onnx-")
    os.makedirs(work, exist_ok=True)
    models = sorted(glob.glob(os.path.join(ROOT, "models", "onnx", "*.onnx")))
    rng = random.Random(args.seed)
    failed = 0
    for case in range(args.count):
        source = rng.choice(models)
        m = onnx.load(source)
        for _ in range(rng.randint(1, 3)):
            mutate(m, rng)
        path = os.path.join(work, f"case{case}.onnx")
        data = m.SerializeToString()
        with open(path, "wb") as f:
            f.write(data[: rng.randrange(len(data))] if rng.random() < 0.05 else data)
        cmd = [args.stc, "compile", path, "-o", os.path.join(work, f"case{case}.net.yaml")]
        if "_seq" in source and rng.random() < 0.5:
            cmd += ["--set", f"dim.seq={rng.choice([8, 8, 1, 100000])}"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            code, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            code, err = "a hang", ""
        internal = any(w in err for w in ("terminate called", "what():", "Assertion", "internal error"))
        if code == 0 or (code == 1 and "error" in err and not internal):
            os.remove(path)
            continue
        failed += 1
        kept = os.path.join(work, f"fail{case}.onnx")
        os.replace(path, kept)
        cmd[2] = kept
        print(f"FAIL case {case} ({os.path.basename(source)}): exit {code}: {' '.join(cmd[1:])}\n"
              f"  kept as {kept}\n  {err.strip()[-400:]}", flush=True)
    print(f"{args.count} cases, {failed} failed ({work})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
