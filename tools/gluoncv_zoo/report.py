"""``docs/model_zoo.md`` from the records of ``generate.py`` and ``check.py``.

>>> _cell("a|b\\nc")
'a/b c'
"""
from __future__ import annotations

import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import gcvzoo_common as common  # noqa: E402

HEADER = """# GluonCV model zoo in symgraph

Every architecture of GluonCV {version}'s `gluoncv.model_zoo.get_model_list()` ({total}
names; the {int8} int8 models are left out: quantization is out of scope, see
`docs/compat.md`), exported by MXNet 1.9.1 and run by symgraph.

How: `tools/gluoncv_zoo/generate.py` (MXNet's virtualenv) builds each model with
`pretrained=False`, fills every parameter from its name alone
(`param_value` in `tools/gluoncv_zoo/gcvzoo_common.py`, so no MXNet RNG is involved),
hybridizes, runs one small deterministic input (the smallest of `gcvzoo_common.attempts`
that the model accepts) and `export`s symbol JSON and params.
`tools/gluoncv_zoo/check.py` loads each export with `mx.gluon.SymbolBlock.imports`, runs
the same input and compares every output (rtol 1e-3 of the value plus 1e-3 of the
output's largest magnitude). Detectors decide discretely (top-k cuts, NMS) on scores that
can agree to 4 digits, so two float32 runs that sum in another order may keep other
boxes; for the models whose float32 outputs do not match as given,
`tools/gluoncv_zoo/float64.py` records MXNet's float64 outputs and the check compares
symgraph's float64 outputs with them (the note says so). MXNet's float64 run computes
each ROIAlign as MXNet's GPU kernel does (its CPU kernel leaves the rows of rois with a
negative batch index uninitialised) and SyncBatchNorm as BatchNorm (float32 only in
MXNet). Regenerate this page with

    for f in classification detection segmentation pose action other; do
        nice /work/mxvenv/bin/python tools/gluoncv_zoo/generate.py --family $f \\
            --out /tmp/gcvzoo/$f; done
    nice /work/venv/bin/python tools/gluoncv_zoo/check.py --exports /tmp/gcvzoo --fresh
    MXNET_MKLDNN_ENABLED=0 nice /work/mxvenv/bin/python tools/gluoncv_zoo/float64.py \\
        --exports /tmp/gcvzoo
    nice /work/venv/bin/python tools/gluoncv_zoo/check.py --exports /tmp/gcvzoo --fresh \\
        --doc docs/model_zoo.md

CI (`tests/test_gluoncv_zoo.py`) runs one small architecture per family from
`tests/fixtures/gluoncv_zoo` (symbol JSON, input and MXNet's outputs; parameters rebuilt
by the same formula).

Statuses: **match**; **mismatch** (runs, outputs differ: worst error relative to the
output's largest magnitude given); **missing op** (the JSON names ops symgraph lacks);
**mxnet defect** (outputs differ where MXNet 1.9.1 computes from uninitialised memory; the
note says which); **load error** / **run error** (symgraph's error); **not built** /
**not exported**
(MXNet 1.9.1 with GluonCV could not; MXNet's last error given); **timeout** (symgraph's
check was stopped: the sweep shared 2 cores with other jobs); **not run** (the sweep
stopped before it).
"""


def _cell(text) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


def _status(made: dict, checked: dict | None) -> tuple[str, str]:
    if made.get("not_run"):
        return "not run", "the sweep's time ran out before this model"
    if not made.get("built"):
        errors = made.get("errors") or ["?"]
        return "not built", errors[-1]
    if not made.get("exported"):
        return "not exported", made.get("export_error", "")
    if checked is None:
        return "not checked", ""
    if checked.get("crashed"):
        return "timeout", checked["errors"][-1] + " on a shared 2-core machine"
    status = checked["status"]
    if status == "missing op":
        return status, ", ".join(checked["missing"])
    if status in ("match", "mismatch", "mxnet defect"):
        worst = max(checked.get("errors") or [0.0])
        detail = f"worst {worst:.2g}" + "".join(f"; {checked[k]}" for k in ("note", "error")
                                                 if k in checked)
        return status, detail
    return status, checked.get("error", "")


def collect(exports: str, names: list[str]) -> list[tuple[dict, dict | None]]:
    """``(generate record, check record or None)`` per model; ``names`` not generated get a
    ``not run`` record."""
    rows = []
    for fam in common.FAMILIES:
        family_dir = os.path.join(exports, fam)
        made, _ = common.read_log(os.path.join(family_dir, "results.jsonl"))
        checked, _ = common.read_log(os.path.join(family_dir, "check.jsonl"))
        made.update({n: {"name": n, "family": fam, "not_run": True} for n in names
                     if common.family(n) == fam and n not in made})
        rows += [(made[n], checked.get(n)) for n in made]
    return rows


def _counts(rows) -> list[str]:
    lines = ["| family | models | built by MXNet | exported | load in symgraph | match | "
             "mxnet defect |", "|---|---|---|---|---|---|---|"]
    fams = list(common.FAMILIES) + ["all"]
    for fam in fams:
        sel = [(m, c) for m, c in rows if fam in ("all", m["family"])]
        if not sel:
            continue
        statuses = [_status(m, c)[0] for m, c in sel]
        loaded = sum(s in ("match", "mismatch", "mxnet defect", "run error") for s in statuses)
        lines.append(f"| {fam} | {len(sel)} | {sum(bool(m.get('built')) for m, _ in sel)} | "
                     f"{sum(bool(m.get('exported')) for m, _ in sel)} | {loaded} | "
                     f"{statuses.count('match')} | {statuses.count('mxnet defect')} |")
    return lines


def _missing(rows) -> list[str]:
    counter = collections.Counter(op for _, c in rows if c and c.get("missing")
                                  for op in c["missing"])
    if not counter:
        return ["None: every op in every exported symbol JSON is registered in symgraph."]
    lines = ["| missing op | models naming it |", "|---|---|"]
    return lines + [f"| `{op}` | {n} |" for op, n in counter.most_common()]


def write(exports: str, doc: str) -> None:
    meta = {"gluoncv": "?", "models": 0, "int8": 0, "names": []}
    for fam in common.FAMILIES:  # generate.py writes one next to each family's records
        if os.path.exists(os.path.join(exports, fam, "meta.json")):
            with open(os.path.join(exports, fam, "meta.json")) as f:
                meta = json.load(f)
    rows = collect(exports, meta["names"])
    out = [HEADER.format(version=meta["gluoncv"], total=meta["models"], int8=meta["int8"]),
           "## Counts", ""]
    out += _counts(rows) + ["", "## Missing operators", ""] + _missing(rows)
    for fam in common.FAMILIES:
        sel = [(m, c) for m, c in rows if m["family"] == fam]
        if not sel:
            continue
        out += ["", f"## {fam}", "", "| model | input | status | detail |", "|---|---|---|---|"]
        for m, c in sorted(sel, key=lambda r: r[0]["name"]):
            status, detail = _status(m, c)
            shape = " ".join("x".join(map(str, s)) for s in m.get("inputs", []))
            out.append(f"| {m['name']} | {shape} | {status} | {_cell(detail)[:200]} |")
    with open(doc, "w") as f:
        f.write("\n".join(out) + "\n")
