#!/usr/bin/env python3
"""runtime_deps.py — the include graph and the call graph between the files
of runtime/, and a check that neither has a cycle.

    scripts/runtime_deps.py [--src DIR] [--obj DIR] [--report]

Include graph: `#include "runtime/..."` lines of runtime/*.c and *.h.
Call graph: from `nm` of each runtime object file (OBJ DIR holds X.c.o for
each runtime/X.c, as CMake's object library builds them): an edge A -> B when
A.c.o leaves undefined a global symbol that B.c.o defines. A file's header
and its source are separate nodes; a cycle in either graph (strongly
connected component of more than one file, or a file including itself) fails
with exit status 1 and lists the files in it. --report prints both graphs,
the line counts of the headers and the largest files and functions.
"""
import argparse
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"runtime/([^"]+)"', re.M)


def include_graph(src):
    g = {}
    for f in sorted(os.listdir(src)):
        if not f.endswith((".c", ".h")):
            continue
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            text = fh.read()
        g[f] = sorted(set(INCLUDE.findall(text)))
    return g


def nm_symbols(path):
    out = subprocess.run(["nm", "-g", path], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2])
    return defined, undefined


def call_graph(src, obj):
    sources = sorted(f for f in os.listdir(src) if f.endswith(".c"))
    syms = {}
    for f in sources:
        o = os.path.join(obj, f + ".o")
        if not os.path.exists(o):
            sys.exit(f"runtime_deps: no object file {o} (build first)")
        syms[f] = nm_symbols(o)
    owner = {}
    for f, (defined, _) in syms.items():
        for s in defined:
            owner[s] = f
    g, why = {}, {}
    for f, (_, undefined) in syms.items():
        g[f] = sorted({owner[s] for s in undefined if s in owner and owner[s] != f})
        for s in undefined:
            if s in owner and owner[s] != f:
                why.setdefault((f, owner[s]), []).append(s)
    return g, why


def cycles(g):
    """Tarjan's strongly connected components with more than one node, plus self-loops."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in g.get(v, []):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def largest_functions(src, n=5):
    """Function bodies by line count: a definition starts at a line beginning
    with an identifier and ending with ')' or '{' at column 0 brace."""
    found = []
    for f in sorted(os.listdir(src)):
        if not f.endswith(".c"):
            continue
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        start, name = None, None
        for i, line in enumerate(lines):
            if line == "{" and i > 0:
                j = i - 1
                while j > 0 and not re.match(r"^[A-Za-z_]", lines[j]):
                    j -= 1
                m = re.search(r"\b([A-Za-z_]\w*)\s*\(", lines[j])
                start, name = j, (m.group(1) if m else "?")
            elif line == "}" and start is not None:
                found.append((i - start + 1, f, name))
                start = None
    return sorted(found, reverse=True)[:n]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=os.path.join(here, "..", "runtime"))
    ap.add_argument("--obj", help="the runtime object files (build/CMakeFiles/dtrx_objs.dir/runtime)")
    ap.add_argument("--report", action="store_true")
    a = ap.parse_args()

    failed = False
    inc = include_graph(a.src)
    graphs = [("include", inc, None)]
    if a.obj:
        calls, why = call_graph(a.src, a.obj)
        graphs.append(("call", calls, why))
    for kind, g, why in graphs:
        cyc = cycles(g)
        in_cycles = sorted({f for c in cyc for f in c})
        print(f"{kind} graph: {len(g)} files, {sum(len(v) for v in g.values())} edges, "
              f"{len(in_cycles)} files in {len(cyc)} cycle(s)")
        for c in cyc:
            failed = True
            print(f"  cycle: {' '.join(c)}")
            if why:
                for x in c:
                    for y in c:
                        if (x, y) in why:
                            print(f"    {x} -> {y}: {', '.join(sorted(why[(x, y)])[:6])}")
        if a.report:
            for f, deps in g.items():
                if deps:
                    print(f"  {f} -> {' '.join(deps)}")
    if a.report:
        sizes = []
        for f in sorted(os.listdir(a.src)):
            if not f.endswith((".c", ".h")):
                continue   # python/, install/
            with open(os.path.join(a.src, f), encoding="utf-8") as fh:
                sizes.append((fh.read().count("\n"), f))
        print("headers: " + ", ".join(f"{f} {n}" for n, f in sizes if f.endswith(".h")))
        print("largest files: " + ", ".join(f"{f} {n}" for n, f in sorted(sizes, reverse=True)[:6]))
        print("largest functions: " + ", ".join(f"{f}:{name} {n}" for n, f, name in largest_functions(a.src, 6)))
    if failed:
        print("runtime_deps: FAIL (cycles between runtime files)")
        return 1
    print("runtime_deps: ok (no cycles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
