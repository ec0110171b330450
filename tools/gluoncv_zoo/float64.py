"""MXNet 1.9.1's float64 outputs of GluonCV exports that symgraph's float32 check did not
match (run with the oracle virtualenv, after ``check.py``).

    nice /work/mxvenv/bin/python tools/gluoncv_zoo/float64.py --exports /tmp/gcvzoo \
        [--models NAME ...]

Detectors decide discretely (top-k cuts, NMS) on scores that can agree to 4 digits; two
float32 runs that sum in another order then keep other boxes, and no tolerance on the
outputs separates that from a wrong operator. In float64 both sides decide alike, so the
float64 outputs are the comparison that can say "same computation". For each model
(default: ``unmatched``) this loads the export
with every float32 dtype made float64 (``gcvzoo_common.widen_json``) and each ROIAlign
computed as MXNet's GPU kernel does for rois of a negative batch index
(``gcvzoo_common.zero_skipped_rois``: MXNet's CPU kernel leaves those rows uninitialised),
each ``_contrib_SyncBatchNorm`` as ``BatchNorm`` (one device: the same computation; MXNet's
SyncBatchNorm is float32 only), runs the recorded input and writes
``<exports>/<family>/<name>-io64.npz``. ``check.py`` then compares symgraph's float64
outputs with these.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check  # noqa: E402
import gcvzoo_common as common  # noqa: E402


def batchnorm_for_syncbn(graph_json: str) -> str:
    """The graph with each ``_contrib_SyncBatchNorm`` a ``BatchNorm`` of the same
    attributes (their defaults agree; ``key`` and ``ndev`` dropped)."""
    graph = json.loads(graph_json)
    for node in graph["nodes"]:
        if node["op"] == "_contrib_SyncBatchNorm":
            node["op"] = "BatchNorm"
            attrs = node.get("attrs", {})
            node["attrs"] = {k: v for k, v in attrs.items() if k not in ("key", "ndev")}
    return json.dumps(graph)


def float64_outputs(mx, np, prefix: str, tmp: str) -> list:
    """MXNet's float64 outputs of the export ``prefix`` on its recorded input (``tmp``: a
    folder for parameters rebuilt by formula)."""
    with open(prefix + "-symbol.json") as f:
        graph_json = f.read()
    io = dict(np.load(prefix + "-io.npz"))
    params = prefix + "-0000.params"
    if not os.path.exists(params):  # big exports keep no params: rebuilt by the formula
        params = os.path.join(tmp, "formula.params")
        graph = json.loads(graph_json)
        constants = {k[len("const:"):]: v for k, v in io.items() if k.startswith("const:")}
        check.formula_params(mx, graph_json, check._model_inputs(graph, io), constants, params)
    saved = mx.nd.load(params)
    args = {k[4:]: v.astype("float64") for k, v in saved.items() if k.startswith("arg:")}
    aux = {k[4:]: v.astype("float64") for k, v in saved.items() if k.startswith("aux:")}
    sym = mx.sym.load_json(
        batchnorm_for_syncbn(common.zero_skipped_rois(common.widen_json(graph_json))))
    args.update({n: mx.nd.array(v, dtype="float64")
                 for n, v in check._model_inputs(json.loads(graph_json), io).items()})
    exe = sym.bind(mx.cpu(), args, aux_states=aux)
    return [o.asnumpy() for o in exe.forward()]


def unmatched(family_dir: str) -> list[str]:
    """The models of ``family_dir`` whose float32 outputs did not match as given: last
    check status not ``match``, or a match by a float32-rounding or float64 verdict."""
    done, _ = common.read_log(os.path.join(family_dir, "check.jsonl"))
    return [n for n, rec in done.items() if rec.get("status") not in (None, "match")
            or str(rec.get("note", "")).startswith(("float64", "float32 rounding"))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exports", required=True)
    ap.add_argument("--models", nargs="*")
    args = ap.parse_args()
    import mxnet as mx
    import numpy as np
    for fam in common.FAMILIES:
        family_dir = os.path.join(args.exports, fam)
        if not os.path.isdir(family_dir):
            continue
        names = args.models or unmatched(family_dir)
        for name in names:
            prefix = os.path.join(family_dir, name)
            if not os.path.exists(prefix + "-io.npz"):
                continue
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    outs = float64_outputs(mx, np, prefix, tmp)
            except Exception as err:  # MXNet's error is reported
                print(name, "no float64 run:", type(err).__name__, str(err)[:300], flush=True)
                continue
            np.savez(prefix + "-io64.npz", **{f"out{i}": o for i, o in enumerate(outs)})
            print(name, "float64 outputs", [list(o.shape) for o in outs], flush=True)


if __name__ == "__main__":
    main()
