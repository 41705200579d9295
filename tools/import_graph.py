#!/usr/bin/env python3
"""The import graph of the repository, and the two rules docs/ARCHITECTURE.md states for it.

- Between the files of one Rust crate, `crate::`, `super::`, `self::` and child-module paths
  form the edges (a `mod x;` declaration alone is not one: it places a file, it does not use it).
  The crate root (lib.rs) is the crate's face, not one of its files: it declares the modules and
  re-exports what they define, and the traits and error types it defines itself are what the
  modules implement, so edges to and from it are listed but not counted in cycles.
  Between the crates, the path dependencies of their Cargo.toml.
- Between the modules of the Python packages, `import` and `from ... import` of first-party
  modules.

Rules checked by `--check`: no cycle between the files of a crate or the modules of a package,
and no import from the controller (control/) into the lab kit (kit/), the lab (topo/), the PTF
harness or anything else above it.

    python3 tools/import_graph.py            # crate graph, then each crate's and package's edges
    python3 tools/import_graph.py --check    # exit 1 and name each cycle or forbidden arrow

Standard library only, so it runs before any venv exists.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Python packages and the folder each lives in. The controller is the bottom layer of the
# Python side: it may import nothing of the others.
PY_PACKAGES = {
    "lossless_paths": "kit",
    "lossless_ctl": "control",
    "lossless_kit": "kit",
    "lossless_topo": "topo",
    "ptf_harness": "ptf-tests",
}
CONTROLLER = "lossless_ctl"
# The repository's layout, below every package (the controller finds the schema exporter there).
BELOW_ALL = "lossless_paths"


# --- Rust -------------------------------------------------------------------------------------

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRING = re.compile(r'r#*"(?:.|\n)*?"#*|"(?:\\.|[^"\\])*"|b\'(?:\\.|[^\'\\])\'')
_MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
_INLINE_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*\{", re.M)
_USE = re.compile(r"\buse\s+([^;]+);")
_PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+)")


def _strip(text: str) -> str:
    return _STRING.sub('""', _COMMENT.sub("", text))


def _without_test_modules(text: str) -> str:
    """Drop `#[cfg(test)] mod tests { ... }`: unit tests may reach anywhere in the crate."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def _expand_use(tree: str) -> list[str]:
    """`crate::{a::X, b::{Y, Z}}` -> ["crate::a::X", "crate::b::Y", "crate::b::Z"]."""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree]
    head, rest = tree.split("{", 1)
    body = rest[: rest.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return [p for part in parts if part for p in _expand_use(head + part)]


class RustCrate:
    def __init__(self, path: Path):
        self.path = path
        manifest = tomllib.loads((path / "Cargo.toml").read_text())
        self.name = manifest["package"]["name"]
        self.deps = sorted(
            name
            for table in ("dependencies",)
            for name, spec in manifest.get(table, {}).items()
            if isinstance(spec, dict) and "path" in spec
        )
        src = path / "src"
        # module path (tuple) -> file; one tree per root (lib.rs, and main.rs when alone).
        self.modules: dict[tuple[str, ...], Path] = {}
        root = src / "lib.rs" if (src / "lib.rs").exists() else src / "main.rs"
        if root.exists():
            self._walk((), root)

    def _walk(self, mod: tuple[str, ...], file: Path) -> None:
        self.modules[mod] = file
        text = _without_test_modules(_strip(file.read_text()))
        base = file.parent if file.name in ("lib.rs", "main.rs", "mod.rs") else file.with_suffix("")
        for name in _MOD_DECL.findall(text):
            for cand in (base / f"{name}.rs", base / name / "mod.rs"):
                if cand.exists():
                    self._walk(mod + (name,), cand)
                    break

    def _resolve(self, mod: tuple[str, ...], path: list[str]) -> tuple[str, ...] | None:
        """The longest module prefix of an absolute path, following `pub use` at the root."""
        best = None
        for n in range(len(path), -1, -1):
            if tuple(path[:n]) in self.modules:
                best = tuple(path[:n])
                break
        if best == () and path:
            return self._reexport(path[0])
        return best

    def _reexport(self, name: str) -> tuple[str, ...] | None:
        """Where `crate::Name` lives: the module the root's `use a::b::Name` takes it from,
        None when that is another crate, the root itself when the root defines it."""
        root = _strip(self.modules[()].read_text())
        for use in _USE.findall(root):
            for item in _expand_use(use):
                parts = [p.removeprefix("self") or "self" for p in item.split("::")]
                parts = [p for p in parts if p != "self"]
                leaf = re.split(r"\bas\b", parts[-1])[-1] if parts else ""
                if leaf != name:
                    continue
                if parts[0] == "crate":
                    parts = parts[1:]
                target = tuple(parts[:-1])
                for n in range(len(target), 0, -1):
                    if target[:n] in self.modules:
                        return target[:n]
                return None
        return ()

    def edges(self) -> set[tuple[str, str]]:
        out = set()
        names = {m: "::".join(m) or "(root)" for m in self.modules}
        for mod, file in self.modules.items():
            text = _without_test_modules(_strip(file.read_text()))
            children = set(_MOD_DECL.findall(text)) - set(_INLINE_MOD.findall(text))
            refs: list[list[str]] = []
            for use in _USE.findall(text):
                refs += [item.split("::") for item in _expand_use(use)]
            refs += [[m.group(1)] + m.group(2).split("::")[1:] for m in _PATH.finditer(text)]
            for child in children:
                if re.search(rf"(?<![\w:]){child}::", text):
                    refs.append(["self", child])
            for ref in refs:
                head, rest = ref[0], [r for r in ref[1:] if r]
                if head == "crate":
                    target = self._resolve(mod, rest)
                elif head == "super":
                    up = mod[:-1]
                    while rest and rest[0] == "super":
                        up, rest = up[:-1], rest[1:]
                    target = self._resolve(mod, list(up) + rest)
                elif head == "self":
                    target = self._resolve(mod, list(mod) + rest)
                elif head in children:
                    target = self._resolve(mod, list(mod) + [head] + rest)
                else:
                    continue
                if target is not None and target != mod:
                    out.add((names[mod], names[target]))
        return out


def rust_crates() -> list[RustCrate]:
    return [RustCrate(p.parent) for p in sorted((ROOT / "toolchain").glob("*/Cargo.toml"))]


# --- Python -----------------------------------------------------------------------------------


def python_modules() -> dict[str, Path]:
    mods = {}
    for pkg, folder in PY_PACKAGES.items():
        base = ROOT / folder
        for f in sorted((base / pkg).rglob("*.py")):
            rel = f.relative_to(base).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            mods[".".join(parts)] = f
    return mods


def python_edges(mods: dict[str, Path]) -> set[tuple[str, str]]:
    """First-party imports, resolved to the longest known module name. Imports under
    `if TYPE_CHECKING:` are annotations only and do not count."""
    out = set()
    for name, file in mods.items():
        tree = ast.parse(file.read_text(), str(file))
        is_pkg = file.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []
        targets = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")
                    base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets += [f"{mod}.{a.name}" for a in node.names] + [mod]
        for t in targets:
            parts = t.split(".")
            for n in range(len(parts), 0, -1):
                cand = ".".join(parts[:n])
                if cand in mods:
                    if cand != name:
                        out.add((name, cand))
                    break
    return out


# --- cycles -----------------------------------------------------------------------------------


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    graph: dict[str, list[str]] = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def problems() -> list[str]:
    out = []
    for crate in rust_crates():
        files = {(a, b) for a, b in crate.edges() if "(root)" not in (a, b)}
        for comp in cycles(files):
            out.append(f"cycle in crate {crate.name}: {' <-> '.join(comp)}")
    crate_edges = {(c.name, d) for c in rust_crates() for d in c.deps}
    for comp in cycles(crate_edges):
        out.append(f"cycle between crates: {' <-> '.join(comp)}")
    mods = python_modules()
    edges = python_edges(mods)
    for pkg in PY_PACKAGES:
        inner = {(a, b) for a, b in edges if a.split(".")[0] == pkg == b.split(".")[0]}
        for comp in cycles(inner):
            out.append(f"cycle in package {pkg}: {' <-> '.join(comp)}")
    for a, b in sorted(edges):
        if a.split(".")[0] == CONTROLLER and b.split(".")[0] not in (CONTROLLER, BELOW_ALL):
            out.append(f"the controller imports {b} in {a} ({mods[a].relative_to(ROOT)})")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 on a cycle or forbidden arrow")
    args = ap.parse_args()
    if args.check:
        found = problems()
        for line in found:
            print(line)
        print(f"import graph: {len(found)} problem(s)")
        return 1 if found else 0
    crates = rust_crates()
    print("# crates (path dependencies)")
    for c in crates:
        print(f"{c.name} -> {', '.join(c.deps) or '-'}")
    for c in crates:
        print(f"\n# {c.name}: files")
        for a, b in sorted(c.edges()):
            print(f"{a} -> {b}")
    edges = python_edges(python_modules())
    print("\n# Python packages: modules")
    for a, b in sorted(edges):
        print(f"{a} -> {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
