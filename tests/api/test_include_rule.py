#!/usr/bin/env python3
"""The layers' rules that a build cannot see (docs/ARCHITECTURE.md):

1. The front ends (cli/, gui/) include only the front-end header larmor.h
   of the library, plus their own folder's headers and system ones
   (<gtk/gtk.h>, libc): no other header of core/, kernels/, recon/,
   phantoms/ or api/, by either spelling.
2. The library (core/, kernels/, recon/, phantoms/, api/) reads the
   environment only in the files named in ENV_READERS.
3. larmor.h is a public face, not an umbrella: the headers it includes,
   followed recursively, reach none of the internals in INTERNAL nor any
   *_impl.h or CUDA header (.cuh, lm_gpu*.h, lm_cuda*.h).

Usage: test_include_rule.py SOURCE_ROOT. Prints every breach (file, line,
what) and exits 1 if there is one."""
import os
import re
import sys

LIBRARY = ("core", "kernels", "recon", "phantoms", "api")
FRONT_ENDS = ("cli", "gui")
FRONT_HEADER = "larmor.h"
# The only library files that call getenv(), and why.
ENV_READERS = {
    # every LARMOR_* knob, read for front ends and tests (lm_tuning_from_env)
    "kernels/lm_tuning.c",
    # the standard cache folder ($XDG_CACHE_HOME, $HOME), not a Larmor knob:
    # the Q cache and gpu-tuned's stored parameters
    "core/lm_qcache.c",
    "kernels/cuda/lm_gpu_ksum.cu",
}
# What a program built on the installed library must not see: the encoding's
# fused cases, the stand-alone Toeplitz solver and the raw sums behind them.
INTERNAL = {"lm_encoding.h", "lm_solver.h", "lm_sums.h", "lm_kernels_impl.h"}
SOURCE = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
# a call, not the word in a comment: getenv( outside /* */ and //
GETENV = re.compile(r"\bgetenv\s*\(")


def walk(root, folder):
    for d, _, files in os.walk(os.path.join(root, folder)):
        for f in sorted(files):
            if f.endswith(SOURCE):
                yield os.path.join(d, f)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def internal(name):
    return (name in INTERNAL or name.endswith("_impl.h") or name.endswith(".cuh")
            or name.startswith(("lm_gpu", "lm_cuda")) or name.startswith("cuda"))


def public_face(root, headers):
    """Breaches of rule 3: each internal header larmor.h reaches, with the
    chain of includes that reaches it."""
    include = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
    chain = {FRONT_HEADER: [FRONT_HEADER]}
    todo = [FRONT_HEADER]
    breaches = []
    while todo:
        h = todo.pop()
        if h not in headers:
            continue
        text = strip_comments(open(headers[h], encoding="utf-8", errors="replace").read())
        for inc in include.findall(text):
            name = os.path.basename(inc)
            if name in chain or (name not in headers and not internal(name)):
                continue
            chain[name] = chain[h] + [name]
            if internal(name):
                breaches.append(f"{FRONT_HEADER} reaches the internal header {name} "
                                f"({' -> '.join(chain[name])})")
            else:
                todo.append(name)
    return breaches, len(chain)


def main(root):
    library_headers = {os.path.basename(p) for L in LIBRARY for p in walk(root, L) if p.endswith((".h", ".cuh"))}
    # lm_config.h is the build's configuration, generated: larmor.h carries it
    library_headers.add("lm_config.h")
    headers = {os.path.basename(p): p for L in LIBRARY for p in walk(root, L) if p.endswith((".h", ".cuh"))}
    breaches, reached = public_face(root, headers)
    checked = 0
    for fe in FRONT_ENDS:
        for path in walk(root, fe):
            own = set(os.listdir(os.path.dirname(path)))
            for no, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                checked += 1
                name = os.path.basename(m.group(2))
                if name == FRONT_HEADER or (m.group(1) == '"' and m.group(2) in own and name not in library_headers):
                    continue
                if name in library_headers:
                    breaches.append(f"{os.path.relpath(path, root)}:{no}: includes the library header {m.group(2)} "
                                    f"(front ends include only {FRONT_HEADER})")
    readers = 0
    for L in LIBRARY:
        for path in walk(root, L):
            rel = os.path.relpath(path, root)
            text = strip_comments(open(path, encoding="utf-8", errors="replace").read())
            for no, line in enumerate(text.split("\n"), 1):
                if GETENV.search(line):
                    readers += 1
                    if rel not in ENV_READERS:
                        breaches.append(f"{rel}:{no}: reads the environment (only {', '.join(sorted(ENV_READERS))} may; "
                                        "a front end sets options instead)")
    for b in breaches:
        print(b)
    print(f"{checked} front-end includes, {reached} headers behind {FRONT_HEADER} and {readers} getenv calls "
          f"in the library checked: {len(breaches)} breach(es)")
    if checked == 0:
        print("no front-end source found under", root)
        return 1
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")))
