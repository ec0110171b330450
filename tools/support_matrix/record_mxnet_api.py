"""Record MXNet 1.9.1's Python API surface: every module of ``python/mxnet`` and its public
names, for the support matrix (``tools/support_matrix/build.py``). Reads a source checkout
(no MXNet install needed) and writes ``tests/fixtures/mxnet_api/modules.json``:
``{module: [public names]}`` where the names are ``__all__`` when the module defines it,
else its top-level functions, classes and assignments not starting with ``_``.

    python tools/support_matrix/record_mxnet_api.py --mxnet-src /work/mxsrc \
        [--out tests/fixtures/mxnet_api/modules.json]

(``--mxnet-src`` holds ``python/mxnet`` of the 1.9.1 tag, e.g. ``git archive 1.9.1 python``.)
"""
from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path


def public_names(source: str) -> list[str]:
    """``__all__`` if the module assigns a literal one, else its public top-level names."""
    tree = ast.parse(source)
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            try:
                return sorted(set(ast.literal_eval(node.value)))
            except ValueError:
                pass
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return sorted({n for n in names if not n.startswith("_")})


def modules(root: Path) -> dict[str, list[str]]:
    """Every public module under ``root`` (python/mxnet) with its public names."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        if not path.is_file():  # a dangling link of the source tree (space.py)
            continue
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts):
            continue
        name = ".".join(("mxnet",) + parts)
        out[name] = public_names(path.read_text(encoding="utf-8"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mxnet-src", required=True, type=Path)
    ap.add_argument("--out", default="tests/fixtures/mxnet_api/modules.json", type=Path)
    args = ap.parse_args()
    found = modules(args.mxnet_src / "python" / "mxnet")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(found)} modules -> {args.out}")


if __name__ == "__main__":
    main()
