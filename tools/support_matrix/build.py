"""The support matrix of the documentation site, generated from the code at every build.

Modules: every module of MXNet 1.9.1's Python package (``tests/fixtures/mxnet_api/
modules.json``, recorded from its source by ``record_mxnet_api.py``) is looked up the way
``import mxnet.X`` is answered under symgraph's alias (``symgraph.alias.target_module``):
**supported** when the module exists and has every public name of MXNet's, **partial** when
some are missing (they are listed), **not supported** when symgraph leaves the module out
(``symgraph.unsupported.MODULES`` gives the reason) or has no such module.

Operators: every operator of MXNet 1.9.1 (``tests/fixtures/op_groups/groups.json``, with
its aliases) against the registry (``symgraph.ops.base.OPS``): **supported** when every
name is registered, **partial** when a parameter is documented as unsupported in its
``OpDef``, **not supported** otherwise, with the reason docs/compat.md gives (a test keeps
that list exact) or the family left out of scope (quantization, engine internals).

    python tools/support_matrix/build.py > /tmp/support.md
"""
from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- support-matrix -->"
QUANTIZATION = re.compile(r"quantiz|requantize|calibrate|_sg_mkldnn")
INTERNAL = {"_CachedOp", "_CachedOpThreadSafe", "_NDArray", "_Native", "_CustomFunction",
            "_NoGradient", "_broadcast_backward", "_CrossDeviceCopy", "_split_v2_backward"}


def module_rows() -> list[dict]:
    """One row per MXNet module: name, status, note."""
    from symgraph import alias, unsupported
    api = json.loads((ROOT / "tests/fixtures/mxnet_api/modules.json").read_text())
    rows = []
    for name, names in api.items():
        short = name[len("mxnet."):] if name != "mxnet" else ""
        reason = unsupported.reason(short) if short else None
        if reason is not None:
            rows.append({"name": name, "status": "not supported", "note": reason})
            continue
        try:
            module = importlib.import_module(alias.target_module(name))
        except ImportError:
            rows.append({"name": name, "status": "not supported",
                         "note": "no counterpart in symgraph"})
            continue
        missing = [n for n in names if not hasattr(module, n)]
        if missing:
            shown = ", ".join(f"`{n}`" for n in missing[:8])
            more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
            rows.append({"name": name, "status": "partial",
                         "note": f"{len(names) - len(missing)} of {len(names)} public names; "
                                 f"missing {shown}{more}"})
        else:
            rows.append({"name": name, "status": "supported",
                         "note": f"{len(names)} public names" if names else ""})
    return rows


def _missing_reasons() -> dict[str, str]:
    text = (ROOT / "docs" / "compat.md").read_text(encoding="utf-8")
    section = text.split("### Operators not registered", 1)[1].split("\n#", 1)[0]
    return dict(re.findall(r"^- `([^`]+)`: (.+)$", section, flags=re.M))


def operator_rows() -> list[dict]:
    """One row per MXNet operator (its alias group): name, aliases, status, note."""
    import symgraph.ops  # noqa: F401 - fills the registry
    from symgraph.ops.base import OPS
    groups = json.loads((ROOT / "tests/fixtures/op_groups/groups.json").read_text())
    reasons = _missing_reasons()
    rows = []
    for group in groups:
        name = min(group)
        row = {"name": name, "aliases": sorted(set(group) - {name})}
        names = [n for n in group if not n.startswith("_sparse_")] or group
        if all(n in OPS for n in names):
            op = OPS[names[0]]
            unsupported = [p.name for p in op.params if "unsupported" in (p.doc or "")]
            if unsupported:
                row.update(status="partial", note="parameters not supported: " +
                           ", ".join(f"`{p}`" for p in unsupported))
            else:
                row.update(status="supported", note="")
        elif any(QUANTIZATION.search(n) for n in group):
            row.update(status="not supported", note="quantization is out of scope "
                                                    "(docs/compat.md)")
        elif set(group) & INTERNAL:
            row.update(status="not supported", note="an engine internal no user code names")
        else:
            row.update(status="not supported",
                       note=reasons.get(name, "not registered (reason missing from "
                                              "docs/compat.md)"))
        rows.append(row)
    return rows


def _counts(rows: list[dict]) -> str:
    total = len(rows)
    by = {s: sum(r["status"] == s for r in rows)
          for s in ("supported", "partial", "not supported")}
    return ", ".join(f"{n} {s}" for s, n in by.items()) + f" (of {total})"


def markdown() -> str:
    """The matrix as Markdown: counts, then the module table and the operator table."""
    modules, ops = module_rows(), operator_rows()
    lines = [f"**Modules**: {_counts(modules)}. **Operators**: {_counts(ops)}.", "",
             "## Modules", "", "| MXNet module | status | notes |", "| --- | --- | --- |"]
    lines += [f"| `{r['name']}` | {r['status']} | {r['note']} |" for r in modules]
    lines += ["", "## Operators", "", "| operator | aliases | status | notes |",
              "| --- | --- | --- | --- |"]
    lines += [f"| `{r['name']}` | {', '.join(f'`{a}`' for a in r['aliases'])} | "
              f"{r['status']} | {r['note']} |" for r in ops]
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown_text: str, page, config, files) -> str:
    """MkDocs hook: the page holding the marker gets the generated matrix in its place."""
    if MARKER in markdown_text:
        return markdown_text.replace(MARKER, markdown())
    return markdown_text


if __name__ == "__main__":
    sys.stdout.write(markdown())
