"""The GluonCV model zoo (the exports ``tools/gluoncv_zoo/generate.py`` writes with MXNet
1.9.1) through both exports, as ``sweep.py`` does for ``gluon.model_zoo.vision``: ONNX
(checker, ONNX Runtime) and the PyTorch module (training forward, parameter gradients,
inference forward, ``torch.compile``), each against symgraph's executor on the recorded
input, the parameters rebuilt by ``gcvzoo_common.param_value``.

    python tools/export_zoo/gluoncv.py --exports /tmp/gcvzoo [--family detection]
        [--compile inductor|aot_eager|none] --out /tmp/gcv_export.jsonl [--resume]
    python tools/export_zoo/gluoncv.py --compile aot_eager --compile-only --interleave \
        --resume --out /tmp/gcv_compile.jsonl     # torch.compile alone, families in turn
    python tools/export_zoo/gluoncv.py --report /tmp/gcv_export.jsonl \
        --compiled /tmp/gcv_compile.jsonl --doc docs/export_zoo_gluoncv.md

Detectors decide discretely (top-k cuts, NMS) on scores two float32 runs may round apart,
so an ONNX Runtime output that differs only in tied detections counts as a match, by the
same rule ``docs/model_zoo.md`` uses against MXNet; and one whose choices flipped is judged
with the discrete ops fed the executor's values (``sweep.cut_verdict``).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "gluoncv_zoo"))
import check as gcv_check  # noqa: E402 - tools/gluoncv_zoo
import sweep  # noqa: E402 - tools/export_zoo

FAMILIES = ("classification", "detection", "segmentation", "pose", "action")
INTRO = ("The GluonCV 0.11 architectures of `docs/model_zoo.md` (exported by MXNet 1.9.1, "
         "parameters rebuilt by formula) through both exports: ONNX (checker, ONNX Runtime; "
         "detections that differ only at tied scores count as equal) and the PyTorch "
         "module (training forward and parameter gradients in float64, inference forward), "
         "against symgraph's executor on the recorded input; `torch.compile` (aot_eager) "
         "in a separate pass. Regenerate with `python tools/export_zoo/gluoncv.py --compile "
         "none --resume --out tools/export_zoo/gluoncv_results.jsonl` and `python "
         "tools/export_zoo/gluoncv.py --compile aot_eager --compile-only --interleave "
         "--resume --out tools/export_zoo/gluoncv_compile_aot_eager.jsonl`, then `--report "
         "tools/export_zoo/gluoncv_results.jsonl --compiled "
         "tools/export_zoo/gluoncv_compile_aot_eager.jsonl --doc "
         "docs/export_zoo_gluoncv.md`.")


def models(exports: str, family: str | None) -> list[tuple[str, str]]:
    """(family folder, model name) of every export with its io record."""
    out = []
    for fam in ([family] if family else FAMILIES):
        folder = os.path.join(exports, fam)
        if not os.path.isdir(folder):
            continue
        for f in sorted(os.listdir(folder)):
            if f.endswith("-symbol.json") and os.path.exists(
                    os.path.join(folder, f.replace("-symbol.json", "-io.npz"))):
                out.append((folder, f[:-len("-symbol.json")]))
    return out


def _same(got, want):
    """A note when the outputs differ only in detections at tied scores (else None)."""
    if any(g.shape != w.shape for g, w in zip(got, want)):
        return None
    return gcv_check._same_detections(list(got), list(want))


def _load(mx, folder: str, name: str):
    """(symbol, arg params, aux params, recorded inputs) of one export."""
    with open(os.path.join(folder, f"{name}-symbol.json")) as f:
        graph_json = f.read()
    io = dict(np.load(os.path.join(folder, f"{name}-io.npz")))
    graph = json.loads(graph_json)
    inputs = gcv_check._model_inputs(graph, io)
    with tempfile.TemporaryDirectory() as tmp:
        json_path, params_path = gcv_check._files(mx, graph_json, graph, io, None, tmp)
        sym = mx.sym.load(json_path)
        loaded = mx.nd.load(params_path)
    args = {k[4:]: v for k, v in loaded.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in loaded.items() if k.startswith("aux:")}
    return sym, args, aux, inputs


def check(mx, folder: str, name: str, compile_: str | None, train: bool = True) -> dict:
    def run(rec):
        rec["family"] = os.path.basename(folder)
        sym, args, aux, inputs = _load(mx, folder, name)
        rec["inputs"] = {k: list(v.shape) for k, v in inputs.items()}
        if not train:
            rec["train_note"] = ("training forward and gradients not compared: the check "
                                 "needs more memory than the machine that ran it had")
        return sweep.check_all(mx, sym, args, aux, inputs, compile_, rec, same=_same,
                               train=train)
    return sweep.timed_record(name, run)


def compile_check(mx, folder: str, name: str, backend: str) -> dict:
    """``torch.compile`` alone: the module in inference mode compiled with ``backend``
    against the executor's float32 inference output (the float32 rule applies)."""
    def run(rec):
        import torch

        from symgraph.export import to_torch
        sym, args, aux, inputs = _load(mx, folder, name)
        infer = sweep.run_executor(mx, sym, args, aux, inputs, train=False)[0]
        m = to_torch(sym, args, aux, input_shapes={k: v.shape for k, v in inputs.items()})
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        with torch.no_grad():
            got = sweep._outputs(torch.compile(m.eval(), backend=backend)(
                **{k: torch.tensor(v) for k, v in inputs.items()}))
        got = [o.numpy() for o in got]
        breaks = torch._dynamo.utils.counters["graph_break"]
        rec.update(graph_breaks=sum(breaks.values()), break_reasons=sorted(breaks)[:3])
        rec.update(backend=backend, torch_compile_error=max(
            sweep._err(o, w) for o, w in zip(got, infer)), _torch_compile_out=got)
        sweep.rounding_verdict(mx, sym, args, aux, inputs, infer, rec, _same)
        rec["status"] = "match" if rec["torch_compile_error"] <= sweep.TOL else "mismatch"
    return sweep.timed_record(name, run)


def merge(records: list[dict], compiled: list[dict]) -> list[dict]:
    """The sweep's records with the ``--compile-only`` results folded in (the torch.compile
    column; a model matches only if its compile check matches too)."""
    by_model = {}
    for c in compiled:
        by_model.setdefault(c["model"], []).append(c)
    out = []
    for rec in records:
        rec = dict(rec)
        for c in by_model.get(rec["model"], ()):
            if c["status"] == "error":
                rec.update(status="error", error=f"torch.compile ({c.get('backend')}): "
                                                 f"{c['error']}")
                continue
            rec["torch_compile_error"] = max(rec.get("torch_compile_error", 0.0),
                                             c["torch_compile_error"])
            rec.setdefault("compile_backends", []).append(c["backend"])
            rec["graph_breaks"] = rec.get("graph_breaks", 0) + c.get("graph_breaks", 0)
            if c.get("torch_compile_note"):
                rec[f"torch_compile_{c['backend']}_note"] = c["torch_compile_note"]
            if c["status"] != "match" and rec["status"] == "match":
                rec["status"] = "mismatch"
        out.append(rec)
    return out


def family_table(records: list[dict], exports: str) -> list[str]:
    """Per family: exports, checked, matching, ill-conditioned, compiled (torch.compile)."""
    lines = ["| family | exports | checked | match | ill-conditioned | torch.compile checked |",
             "|---|---:|---:|---:|---:|---:|"]
    for fam in FAMILIES:
        mine = [r for r in records if r.get("family") == fam]
        # the exports on this machine and those checked before (the folder may be partial)
        total = len({name for _, name in models(exports, fam)} | {r["model"] for r in mine})
        lines.append(f"| {fam} | {total} | {len(mine)} | "
                     f"{sum(r['status'] == 'match' for r in mine)} | "
                     f"{sum(r['status'] == 'ill-conditioned' for r in mine)} | "
                     f"{sum(bool(r.get('compile_backends')) for r in mine)} |")
    compiled = [r for r in records if r.get("compile_backends")]
    same = sum(r["torch_compile_error"] <= sweep.TOL for r in compiled)
    backends = sorted({b for r in compiled for b in r["compile_backends"]})
    lines += ["", f"`torch.compile` ({', '.join(backends) or 'none'}): {same} of "
              f"{len(compiled)} compiled modules match the eager module."]
    seen = {r["model"] for r in records}
    left = [name for _, name in models(exports, None) if name not in seen]
    breaks = sorted(r["model"] for r in records if r.get("graph_breaks"))
    lines += [""] + ([f"Not checked yet: {', '.join(left)}."] if left else [])
    if breaks:
        lines.append(f"`torch.compile` runs with graph breaks (data-dependent sizes: box_nms "
                     f"and ROIAlign's references) in: {', '.join(breaks)}.")
    return lines + [""]


def _records(path: str) -> list[dict]:
    """The records of a sweep file; a last line cut short (a sweep stopped while writing)
    is left out, so ``--resume`` checks that model again."""
    lines = open(path).read().splitlines()
    out = []
    for i, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i != len(lines) - 1:
                raise
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exports", default="/tmp/gcvzoo")
    ap.add_argument("--family", default=None)
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--compile", default="aot_eager")
    ap.add_argument("--out", default="/tmp/gcv_export.jsonl")
    ap.add_argument("--resume", action="store_true", help="skip models already in --out")
    ap.add_argument("--compile-only", action="store_true",
                    help="only the torch.compile check (with --compile's backend)")
    ap.add_argument("--inference-only", action="store_true",
                    help="skip the training comparison (models whose check does not fit "
                         "in memory; the record says so)")
    ap.add_argument("--interleave", action="store_true",
                    help="take the families in turn (a partial run then samples all)")
    ap.add_argument("--report", default=None, help="a --out file to summarise")
    ap.add_argument("--compiled", nargs="*", default=(),
                    help="--compile-only files to merge into the report")
    ap.add_argument("--doc", default=None)
    args = ap.parse_args(argv)
    if args.report:
        records = merge(_records(args.report),
                        [r for path in args.compiled for r in _records(path)])
        if args.doc:
            sweep.write_doc(records, args.doc, "GluonCV model-zoo export sweep", INTRO,
                            family_table(records, args.exports))
        print(sum(r["status"] == "match" for r in records), "of", len(records), "match")
        return 0
    import symgraph as mx
    done = set()
    if args.resume and os.path.exists(args.out):
        done = {r["model"] for r in _records(args.out)}
    with open(args.out, "a" if args.resume else "w") as f:
        todo = models(args.exports, args.family)
        if args.interleave:
            rank = {}
            for i, (folder, _) in enumerate(todo):
                rank[i] = sum(f == folder for f, _ in todo[:i])
            todo = [todo[i] for i in sorted(rank, key=lambda i: (rank[i], todo[i][0]))]
        for folder, name in todo:
            if (args.models and name not in args.models) or name in done:
                continue
            if args.compile_only:
                rec = compile_check(mx, folder, name, args.compile)
            else:
                rec = check(mx, folder, name, None if args.compile == "none" else args.compile,
                            train=not args.inference_only)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            print(name, rec["status"], rec.get("error", "")[:200], rec["seconds"], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
