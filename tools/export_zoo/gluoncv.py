"""The GluonCV model zoo (the exports ``tools/gluoncv_zoo/generate.py`` writes with MXNet
1.9.1) through both exports, as ``sweep.py`` does for ``gluon.model_zoo.vision``: ONNX
(checker, ONNX Runtime) and the PyTorch module (training forward, parameter gradients,
inference forward, ``torch.compile``), each against symgraph's executor on the recorded
input, the parameters rebuilt by ``gcvzoo_common.param_value``.

    python tools/export_zoo/gluoncv.py --exports /tmp/gcvzoo [--family detection]
        [--compile inductor|aot_eager|none] --out /tmp/gcv_export.jsonl [--resume]
    python tools/export_zoo/gluoncv.py --report /tmp/gcv_export.jsonl \
        --doc docs/export_zoo_gluoncv.md

Detectors decide discretely (top-k cuts, NMS) on scores two float32 runs may round apart,
so an ONNX Runtime output that differs only in tied detections counts as a match, by the
same rule ``docs/model_zoo.md`` uses against MXNet.
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
         "module, against symgraph's executor on the recorded input. Regenerate with "
         "`python tools/export_zoo/gluoncv.py --compile none --resume --out "
         "tools/export_zoo/gluoncv_results.jsonl`, then `--report ... --doc`.")


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


def check(mx, folder: str, name: str, compile_: str | None) -> dict:
    def run(rec):
        rec["family"] = os.path.basename(folder)
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
        rec["inputs"] = {k: list(v.shape) for k, v in inputs.items()}
        return sweep.check_all(mx, sym, args, aux, inputs, compile_, rec, same=_same)
    return sweep.timed_record(name, run)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exports", default="/tmp/gcvzoo")
    ap.add_argument("--family", default=None)
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--compile", default="aot_eager")
    ap.add_argument("--out", default="/tmp/gcv_export.jsonl")
    ap.add_argument("--resume", action="store_true", help="skip models already in --out")
    ap.add_argument("--report", default=None, help="a --out file to summarise")
    ap.add_argument("--doc", default=None)
    args = ap.parse_args(argv)
    if args.report:
        records = [json.loads(line) for line in open(args.report)]
        if args.doc:
            sweep.write_doc(records, args.doc, "GluonCV model-zoo export sweep", INTRO)
        print(sum(r["status"] == "match" for r in records), "of", len(records), "match")
        return 0
    import symgraph as mx
    done = set()
    if args.resume and os.path.exists(args.out):
        done = {json.loads(line)["model"] for line in open(args.out)}
    with open(args.out, "a" if args.resume else "w") as f:
        for folder, name in models(args.exports, args.family):
            if (args.models and name not in args.models) or name in done:
                continue
            rec = check(mx, folder, name, None if args.compile == "none" else args.compile)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            print(name, rec["status"], rec.get("error", "")[:200], rec["seconds"], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
