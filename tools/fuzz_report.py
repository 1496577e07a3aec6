#!/usr/bin/env python3
"""Mutated results through `stc report`: every one must give a page (exit 0) without the injected markup or
a coordinate that is not a number, or one line naming the file and the field (exit 1); never a crash, an
internal error, a hang or a second line.

  python3 tools/fuzz_report.py SEED COUNT [--stc PATH] [--work DIR]

The results it mutates are made first with --json --timeline: a simulation that completes, a deadlock,
a sizing, a run and a model's decode. Each case deletes a key, or sets a value to another type, a negative,
a huge number, markup or an empty container, at one to three places anywhere in the result. A failing case
is kept as DIR/failN.json and printed. Exits 1 when a case fails.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MARKUP = "<b>\"&"
VALUES = [None, -1, 0, 1, 2**50 + 1, 2**62, -2**62, 2**64 - 1, 1e300, 1e-310, 1e-5, -0.5, 3.5, "x", MARKUP, [],
          {}, True, [1, 2, 3], [[0, 1, "busy"]], [[0, 1, 2, 3, 4]]]


def broken(page):
    """What a page must never hold: the injected markup unescaped, or a coordinate that is not a number."""
    for bad in (MARKUP, "nan", "inf\"", "=\"-inf", "width=\"-"):
        if bad in page:
            return f"the page holds {bad!r}"
    return None


def results(stc, work):
    m = lambda *p: os.path.join(ROOT, "models", *p)
    commands = {
        "completes": ["simulate", m("graphs", "mlp.yaml")],
        "deadlock": ["simulate", m("networks", "fork_join.yaml")],
        "sizing": ["size-fifos", m("graphs", "mlp.yaml"), "-o", os.path.join(work, "sized.yaml")],
        "run": ["run", m("graphs", "mlp.yaml"), "-o", os.path.join(work, "project"), "--no-conform", "--force"],
        "decode": ["simulate", m("gpt2-tiny.yaml"), "--decode", "8:8"],
    }
    out = []
    for name, args in commands.items():
        r = subprocess.run([stc] + args + ["--json", "--timeline"], capture_output=True, text=True)
        if r.returncode not in (0, 3):
            sys.exit(f"fuzz_report: {name}: stc failed: {r.stderr}")
        out.append(json.loads(r.stdout))
    return out


def places(j, at=()):
    yield at
    if isinstance(j, dict):
        for k, v in j.items():
            yield from places(v, at + (k,))
    elif isinstance(j, list):
        for i, v in enumerate(j[:6]):  # the first few of a list: the rest are alike
            yield from places(v, at + (i,))


def mutate(doc, r):
    spots = list(places(doc))[1:]
    for _ in range(r.randint(1, 3)):
        at = r.choice(spots)
        parent = doc
        try:
            for k in at[:-1]:
                parent = parent[k]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed its parent
        if isinstance(parent, dict) and r.random() < 0.3:
            parent.pop(at[-1], None)
        elif isinstance(parent, (dict, list)):
            try:
                parent[at[-1]] = r.choice(VALUES)
            except (IndexError, TypeError):
                pass  # an earlier change made the parent a list where a key was, or shortened it


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("seed", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("--stc", default=os.path.join(ROOT, "build", "tools", "stc", "stc"))
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="fuzz_report_")
    os.makedirs(work, exist_ok=True)
    bases = results(a.stc, work)
    r = random.Random(a.seed)
    failed = 0
    for case in range(a.count):
        doc = json.loads(json.dumps(r.choice(bases)))
        mutate(doc, r)
        src, page = os.path.join(work, "in.json"), os.path.join(work, "out.html")
        with open(src, "w") as f:
            json.dump(doc, f)
        try:
            p = subprocess.run([a.stc, "report", src, "-o", page], capture_output=True, text=True, timeout=30)
            ok = p.returncode == 0 or (p.returncode == 1 and p.stderr.count("\n") == 1 and
                                        p.stderr.startswith(src + ":") and "internal error" not in p.stderr)
            why = f"exit {p.returncode}: {p.stderr.strip()[:300]}"
            if p.returncode == 0:
                with open(page) as f:
                    why = broken(f.read())
                ok = why is None
        except subprocess.TimeoutExpired:
            ok, why = False, "no answer in 30 s"
        if not ok:
            failed += 1
            keep = os.path.join(work, f"fail{case}.json")
            shutil.copy(src, keep)
            print(f"case {case}: {why} ({keep})")
    print(f"{a.count - failed} passed, {failed} failed")
    if not a.work and not failed:
        shutil.rmtree(work)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
