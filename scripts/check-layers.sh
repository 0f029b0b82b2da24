#!/bin/bash
# scripts/check-layers.sh - user/ is layered, lowest first:
#   base cpython native model output diff history push record live cli
# A file may include headers of its own folder and of the folders below it,
# never of one above, and call only functions defined there: base knows
# nothing of CPython, the model nothing of how it is written out, only cli of
# the commands. Within a layer no two modules depend on each other in a
# circle. A module is x.c and x.h, with x_priv.h (its inside) and the files
# x_*.c that include x.h or x_priv.h (one module in several files: the
# writers behind writer.h, session_*.c behind session_priv.h). A module
# depends on another when it includes its header or calls a function it
# defines (read from the built objects, build/user/*/*.o: a callback declared
# in the caller's header is still a circle; a circle of modules is one
# concern split in two, or two that should share a third). Prints each
# include or call that goes up and each circle, and exits 1 if there is one;
# prints one line and exits 0 otherwise.
set -u
cd "$(dirname "$0")/.."
exec python3 - <<'PY'
import glob, os, re, subprocess, sys
from graphlib import CycleError, TopologicalSorter

LAYERS = "base cpython native model output diff history push record live cli".split()
rank = {l: i for i, l in enumerate(LAYERS)}
for d in sorted(glob.glob("user/*/")):
    if d.split("/")[1] not in rank:
        sys.exit(f"check-layers: {d[:-1]} is no layer (add it to scripts/check-layers.sh)")
files = sorted(glob.glob("user/*/*.[ch]"))
home = {os.path.basename(h): h.split("/")[1] for h in files if h.endswith(".h")}
includes = {f: re.findall(r'^#include "([^"]*)"', open(f).read(), re.M) for f in files}


def module_of(path):
    """x for x.c, x.h, x_priv.h, and x_*.c that includes x.h or x_priv.h."""
    stem = os.path.basename(path).rsplit(".", 1)[0]
    stem = stem[:-5] if stem.endswith("_priv") else stem
    src = path if path.endswith((".c", ".h")) else None
    parts = stem.split("_")
    for i in range(len(parts) - 1, 0, -1):
        x = "_".join(parts[:i])
        if src and {x + ".h", x + "_priv.h"} & set(includes.get(src, [])) and \
           (x + ".h" in home or x + "_priv.h" in home):
            return x
    return stem


bad, deps = False, {}
for f in files:
    layer, m = f.split("/")[1], module_of(f)
    for inc in includes[f]:
        if inc not in home:
            continue        # include/, build/: below every layer
        if rank[home[inc]] > rank[layer]:
            print(f"check-layers: {f} ({layer}) includes {inc} ({home[inc]}), a layer above it")
            bad = True
        t = module_of(os.path.join("user", home[inc], inc))
        if t != m:
            deps.setdefault(m, set()).add(t)

objs = sorted(glob.glob("build/user/*/*.o"))
if not objs:
    print("check-layers: no objects in build/user: calls not checked (run make first)")
    bad = True
source = {o: "user/" + o[len("build/user/"):-2] + ".c" for o in objs}
nm = subprocess.run(["nm", "-A", "-g"] + objs, capture_output=True, text=True, check=True).stdout
defined, used = {}, []
for line in nm.splitlines():
    where, _, rest = line.partition(".o:")
    where += ".o"
    fields = rest.split()
    if len(fields) == 3 and fields[1] in "TDBR":
        defined[fields[2]] = where
    elif len(fields) == 2 and fields[0] == "U":
        used.append((where, fields[1]))
for o, sym in used:
    if sym not in defined or o not in source:
        continue
    f, g = source[o], source[defined[sym]]
    m, t = module_of(f), module_of(g)
    if m == t:
        continue
    if rank[g.split("/")[1]] > rank[f.split("/")[1]]:
        print(f"check-layers: {f} calls {sym} of {g}, a layer above it")
        bad = True
    deps.setdefault(m, set()).add(t)

try:
    TopologicalSorter(deps).prepare()
except CycleError as e:
    print("check-layers: modules that include or call each other in a circle:", " -> ".join(e.args[1]))
    bad = True
if bad:
    sys.exit(1)
print(f"check-layers: user/ includes and calls go down only ({' '.join(LAYERS)}), in no circle")
PY
