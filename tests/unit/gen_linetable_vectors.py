#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Generate tests/unit/linetable_vectors.h from real CPython interpreters.

Usage:
    gen_linetable_vectors.py PYTHON [PYTHON...] > tests/unit/linetable_vectors.h

Each PYTHON (3.8 or newer) is run on this very script with --dump: it
compiles SAMPLE below, and for every code object reports the raw line table
(co_lnotab up to 3.9, co_linetable from 3.10), co_firstlineno and the line of
every 2-byte code unit as the interpreter itself sees it:

    3.8, 3.9   dis.get_instructions() starts_line, carried forward
    3.10       co_lines() ranges (None: no line)
    3.11+      co_positions(), one entry per code unit, cross-checked
               against co_lines()

3.11+ interpreters are run a second time with -X no_debug_ranges, which
makes the compiler emit the "no column" entries (code 13) instead of the
short, one-line and long forms.

The driver runs under any Python 3 and prints the C header on stdout.
"""
import json
import subprocess
import sys

PAD = 140  # lines of padding: more than an int8 line delta can hold


def sample_source():
    """The module compiled by every interpreter. Built, not literal, so the
    long stretches (big line jumps, wide columns, long lines) stay readable."""
    pad = ["    # padding line %d" % i for i in range(PAD)]
    names = ", ".join("a%d" % i for i in range(150))
    wide = " " * 130
    src = [
        "import functools",
        "",
        "",
        "def simple(a, b):",
        "    c = a + b",
        "",
        "",
        "    return c * 2",
        "",
        "",
        "def multi_line_call(x):",
        "    result = max(",
        "        x,",
        "        1,",
        "",
        "        2,",
        "    )",
        "    return result",
        "",
        "",
        "def loop(n):",
        "    total = 0",
        "    for i in range(n):",
        "        if i % 2:",
        "            total += i",
        "        else:",
        "            total -= 1",
        "    while total > 100:",
        "        total //= 2",
        "    return total",
        "",
        "",
        "@functools.lru_cache(maxsize=None)",
        "def decorated(",
        "    a,",
        "    b=3,",
        "):",
        "    return a * b",
        "",
        "",
        "def big_jump_forward():",
        "    x = 1",
    ] + pad + [
        "    y = 2",
        "    return x + y",
        "",
        "",
        "def big_jump_backward(items):",
        "    out = []",
        "    for item in items:",
        "        out.append(item)",
    ] + pad + [
        "        out.append(-item)",
        "    return out",
        "",
        "",
        "def long_call(f, a, b):",
        "    return f(",
        "        a,",
    ] + pad + [
        "        b)",
        "",
        "",
        "def long_line(%s):" % names,
        "    x = [%s]" % names,
        "    return x",
        "",
        "",
        "def wide_columns(x):",
        "    return (",
        wide + "x + len('x'))",
        "",
        "",
        "def handlers(path):",
        "    try:",
        "        f = open(path)",
        "    except OSError as e:",
        "        print(e)",
        "        return None",
        "    finally:",
        "        print('done')",
        "    with open(path) as f:",
        "        data = f.read()",
        "    return data",
        "",
        "",
        "def gen(n):",
        "    for i in range(n):",
        "        yield i * 2",
        "    yield from range(3)",
        "",
        "",
        "async def coro(x):",
        "    await x",
        "    async with x as y:",
        "        return y",
        "",
        "",
        "def closures(n):",
        "    square = lambda v: v * v",
        "    evens = [square(i) for i in range(n) if i % 2 == 0]",
        "    def inner():",
        "        return n + len(evens)",
        "    return inner",
        "",
        "",
        "class Klass:",
        "    '''doc'''",
        "    attr = 1",
        "",
        "    def method(self):",
        "        return self.attr",
        "",
        "",
        "x = simple(1, 2)",
    ]
    return "\n".join(src) + "\n"


def walk(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            for sub in walk(c):
                yield sub


def lines_38(code):
    import dis
    n = len(code.co_code) // 2
    out = [None] * n
    cur = None
    starts = {}
    for ins in dis.get_instructions(code):
        if ins.starts_line is not None:
            starts[ins.offset] = ins.starts_line
    for i in range(n):
        cur = starts.get(2 * i, cur)
        out[i] = cur
    return out


def lines_co_lines(code):
    n = len(code.co_code) // 2
    out = [None] * n
    for start, end, line in code.co_lines():
        for off in range(start, end, 2):
            out[off // 2] = line
    return out


def lines_positions(code):
    out = [p[0] for p in code.co_positions()]
    assert len(out) == len(code.co_code) // 2, code.co_name
    # co_lines() walks the same table another way: they must agree.
    assert out == lines_co_lines(code), code.co_name
    return out


def dump():
    v = sys.version_info
    code = compile(sample_source(), "<vectors>", "exec")
    if v < (3, 10):
        fmt, table_of, lines_of = "PY_LINETABLE_LNOTAB", "co_lnotab", lines_38
    elif v < (3, 11):
        fmt, table_of, lines_of = "PY_LINETABLE_310", "co_linetable", lines_co_lines
    else:
        fmt, table_of, lines_of = "PY_LINETABLE_LOCATIONS", "co_linetable", lines_positions
    res = []
    for c in walk(code):
        lines = [-1 if l is None else l for l in lines_of(c)]
        res.append({
            "name": getattr(c, "co_qualname", c.co_name),
            "firstlineno": c.co_firstlineno,
            "table": list(getattr(c, table_of)),
            "lines": lines,
        })
    json.dump({"version": "%d.%d.%d" % v[:3], "format": fmt, "codes": res},
              sys.stdout)


def run(python, extra):
    out = subprocess.check_output([python] + extra + [__file__, "--dump"])
    return json.loads(out.decode())


def c_array(ctype, name, values):
    body = []
    for i in range(0, len(values), 16):
        body.append("\t" + ", ".join(str(x) for x in values[i:i + 16]) + ",")
    return "static const %s %s[] = {\n%s\n};\n" % (ctype, name, "\n".join(body))


def emit(runs):
    print("/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */")
    print("/*")
    print(" * GENERATED by tests/unit/gen_linetable_vectors.py: do not edit. Regenerate with")
    print(" *   python3 tests/unit/gen_linetable_vectors.py \\")
    for python, extra, _ in runs:
        if not extra:
            print(" *     %s \\" % python)
    print(" *     > tests/unit/linetable_vectors.h")
    print(" * Real line tables of the code objects of the generator's sample module")
    print(" * as compiled by those interpreters (3.11+ ones also with")
    print(" * -X no_debug_ranges), with each interpreter's own answer")
    print(" * (dis / co_lines() / co_positions()) for the line of every 2-byte code")
    print(" * unit; -1 where it has none.")
    print(" */")
    print("#ifndef LINETABLE_VECTORS_H")
    print("#define LINETABLE_VECTORS_H")
    print("#include <stddef.h>")
    print("#include <stdint.h>")
    print('#include "py_linetable.h"')
    print()
    print("struct lt_vector {")
    print("\tconst char *name;\t\t/* interpreter version and code object */")
    print("\tenum linetable_format fmt;")
    print("\tint firstlineno;")
    print("\tconst uint8_t *table;")
    print("\tsize_t table_len;")
    print("\tconst int32_t *lines;\t\t/* line of byte offset 2 * i */")
    print("\tsize_t n_units;\t\t\t/* 2-byte code units in the bytecode */")
    print("};")
    print()
    entries = []
    for python, extra, data in runs:
        tag = "v" + "".join(data["version"].split(".")[:2])
        label = data["version"] + (" " + " ".join(extra) if extra else "")
        if extra:
            tag += "_nodr"
        for i, c in enumerate(data["codes"]):
            base = "%s_%d" % (tag, i)
            # An empty table still needs an array to point at.
            print(c_array("uint8_t", base + "_table", c["table"] or [0]))
            print(c_array("int32_t", base + "_lines", c["lines"] or [0]))
            entries.append('\t{ "%s %s", %s, %d, %s_table, %d, %s_lines, %d },' % (
                label, c["name"], data["format"], c["firstlineno"], base,
                len(c["table"]), base, len(c["lines"])))
    print("static const struct lt_vector lt_vectors[] = {")
    print("\n".join(entries))
    print("};")
    print()
    print("#endif")


def main():
    if sys.argv[1:] == ["--dump"]:
        dump()
        return
    if not sys.argv[1:]:
        sys.exit(__doc__)
    runs = []
    for python in sys.argv[1:]:
        data = run(python, [])
        runs.append((python, [], data))
        if data["format"] == "PY_LINETABLE_LOCATIONS":
            runs.append((python, ["-X", "no_debug_ranges"],
                         run(python, ["-X", "no_debug_ranges"])))
    emit(runs)


if __name__ == "__main__":
    main()
