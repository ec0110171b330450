"""Load the GluonCV exports of ``generate.py`` in symgraph and compare with MXNet's outputs.

    nice /work/venv/bin/python tools/gluoncv_zoo/check.py --exports /tmp/gcvzoo \
        [--doc docs/model_zoo.md] [--models NAME ...]

For every model ``generate.py`` recorded under ``<exports>/<family>/results.jsonl``: the ops
of its symbol JSON that symgraph lacks, then ``gluon.SymbolBlock.imports`` of the JSON and
params, one forward on the recorded input, and each output against MXNet's
(``gcvzoo_common.compare``, rtol 1e-3 of the value plus 1e-3 of the output's largest magnitude).
Status per model: ``match``, ``mismatch``, ``missing op``, ``load error``, ``run error``.
A float32 mismatch still matches when symgraph's float64 outputs match MXNet's float64
outputs (``float64.py`` writes those, after a first check).
Records go to ``<exports>/<family>/check.jsonl``; ``--doc`` writes the Markdown page
(``report.py``).

``check_model`` is also what ``tests/test_gluoncv_zoo.py`` runs on its fixtures, with the
parameters rebuilt from ``gcvzoo_common.param_value`` instead of a params file.

>>> sorted(symbol_ops({"nodes": [{"op": "null"}, {"op": "Convolution"}, {"op": "relu"}]}))
['Convolution', 'relu']
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import gcvzoo_common as common  # noqa: E402


def symbol_ops(graph: dict) -> set[str]:
    """The operator names a symbol JSON uses (variables aside)."""
    return {n["op"] for n in graph["nodes"] if n["op"] != "null"}


def missing_ops(graph: dict) -> list[str]:
    """The ops of ``graph`` that symgraph's registry does not know."""
    from symgraph.base import MXNetError
    from symgraph.ops.base import get_op
    missing = []
    for op in sorted(symbol_ops(graph)):
        try:
            get_op(op)
        except MXNetError:
            missing.append(op)
    return missing


def input_names(graph: dict, n_inputs: int) -> list[str]:
    """Gluon's ``export`` names the inputs ``data`` or ``data0``, ``data1``, ..."""
    names = {n["name"] for n in graph["nodes"] if n["op"] == "null"}
    if n_inputs == 1 and "data" in names:
        return ["data"]
    return [f"data{i}" for i in range(n_inputs)]


def formula_params(mx, graph_json: str, inputs: dict, constants: dict, path: str) -> str:
    """Write ``path``: every argument and auxiliary state of the symbol (inputs aside) from
    ``gcvzoo_common.param_value`` at the shapes symgraph infers; ``constants`` as recorded."""
    sym = mx.sym.load_json(graph_json)
    arg_shapes, _, aux_shapes = sym.infer_shape(**{k: v.shape for k, v in inputs.items()})
    saved = {}
    for kind, names, shapes in (("arg", sym.list_arguments(), arg_shapes),
                                ("aux", sym.list_auxiliary_states(), aux_shapes)):
        for name, shape in zip(names, shapes):
            if name in inputs:
                continue
            value = constants[name] if name in constants else common.param_value(name, shape)
            saved[f"{kind}:{name}"] = mx.nd.array(value, dtype=value.dtype)
    mx.nd.save(path, saved)
    return path


def _model_inputs(graph: dict, io: dict) -> dict:
    names = input_names(graph, len([k for k in io if k.startswith("in")]))
    return {name: io[f"in{i}"] for i, name in enumerate(names)}


def _files(mx, graph_json: str, graph: dict, io: dict, params_path, tmp) -> tuple[str, str]:
    """``(symbol json path, params path)``; without ``params_path`` both are written under
    ``tmp``, the parameters rebuilt by formula."""
    if params_path is not None:
        return params_path.replace("-0000.params", "-symbol.json"), params_path
    json_path = os.path.join(tmp, "m-symbol.json")
    with open(json_path, "w") as f:
        f.write(graph_json)
    constants = {k[len("const:"):]: v for k, v in io.items() if k.startswith("const:")}
    return json_path, formula_params(mx, graph_json, _model_inputs(graph, io), constants,
                                     os.path.join(tmp, "m-0000.params"))


def _load_and_run(mx, graph_json: str, graph: dict, io: dict, params_path, tmp):
    inputs = _model_inputs(graph, io)
    names = list(inputs)
    try:
        json_path, params_path = _files(mx, graph_json, graph, io, params_path, tmp)
        net = mx.gluon.SymbolBlock.imports(json_path, names, params_path)
    except Exception as err:  # recorded
        return "load error", err, None
    try:
        out = net(*[mx.nd.array(inputs[n]) for n in names])
        outs = out if isinstance(out, (list, tuple)) else [out]
        return "ran", None, [o.asnumpy() for o in outs]
    except Exception as err:
        return "run error", err, None


def _detection_rows(outs):
    """``(ids, scores, boxes[, masks])`` of shapes ``(B, N[, 1]), (B, N[, 1]), (B, N, 4)[,
    (B, N, ...)]`` as rows (id, score, box, mask values...) sorted by id, score and box, or
    None for other outputs."""
    import numpy as np
    if len(outs) not in (3, 4) or outs[2].shape[-1] != 4 or \
            not outs[0].size == outs[1].size == outs[2].size // 4:
        return None
    n = outs[0].size
    if len(outs) == 4 and outs[3].size % n:
        return None
    widths = (1, 1, 4) + ((outs[3].size // n,) if len(outs) == 4 else ())
    rows = np.concatenate([o.reshape(-1, w) for o, w in zip(outs, widths)], axis=1)
    # sort on values rounded to 1e-3 of each column's largest magnitude, so float32 noise in
    # near-equal scores cannot order two rows one way here and the other way in MXNet
    keys = rows[:, :6].astype(np.float64)
    grid = np.maximum(np.abs(keys).max(axis=0), 1e-12) * 1e-3
    return rows[np.lexsort(np.round(keys / grid).T[::-1])]


def _paired(got_rows, want_rows):
    """``got_rows`` reordered to face their nearest ``want_rows``: per class id, the
    assignment of least summed score and box distance (padding rows, id -1, stay in order),
    so near-equal scores sorted apart by float32 noise still meet their counterpart."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment
    out = got_rows.copy()
    finite = np.where(np.isfinite(want_rows[:, 1:6]), np.abs(want_rows[:, 1:6]), 0.0)
    scale = np.maximum(finite.max(axis=0), 1e-12)
    for cls in np.unique(want_rows[:, 0]):
        gi, wi = np.where(got_rows[:, 0] == cls)[0], np.where(want_rows[:, 0] == cls)[0]
        if cls == -1 or len(gi) != len(wi) or len(wi) > 4096:
            continue
        diff = np.abs(got_rows[gi, None, 1:6] - want_rows[None, wi, 1:6])
        same = got_rows[gi, None, 1:6] == want_rows[None, wi, 1:6]  # equal infinities too
        cost = np.nan_to_num(np.where(same, 0.0, diff) / scale, nan=1e30, posinf=1e30)
        r, c = linear_sum_assignment(cost.sum(-1))
        out[wi[c]] = got_rows[gi[r]]
    return out


def _same_detections(outs, want) -> str | None:
    """Why detector outputs that differ as given are still MXNet's, or None. MXNet leaves the
    order of equal scores unspecified (box_nms / topk ties; its CPU kernels use std::sort and
    std::partial_sort, its GPU kernels other sorts), so rows are compared once sorted; and
    which of the detections tied at the lowest kept score a top-k keeps is unspecified too."""
    import numpy as np
    got_rows, want_rows = _detection_rows(outs), _detection_rows(want)
    if got_rows is None or want_rows is None or got_rows.shape != want_rows.shape:
        return None
    if common.compare(got_rows, want_rows)[0] or \
            common.compare(_paired(got_rows, want_rows), want_rows)[0]:
        return "equal-score detections in another order"
    low = want_rows[:, 1].min()
    near = 1e-6 * max(abs(float(low)), 1e-12)  # the tied scores, up to last-bit rounding
    got_low, want_low = np.abs(got_rows[:, 1] - low) <= near, want_rows[:, 1] == low
    if want_low.sum() < 2 or got_low.sum() != want_low.sum():
        return None
    if common.compare(got_rows[~got_low], want_rows[~want_low])[0]:
        return (f"the {int(want_low.sum())} detections tied at the lowest kept score "
                f"{low:g} are another choice among the tied candidates")
    return None


ROIALIGN_DEFECT = (
    "MXNet defect: its CPU ROIAlign skips a roi of batch index -1 (the FPN level assignment "
    "marks rois of other levels so) by writing top_data[n] = 0 (roi_align.cc:171), one "
    "element of row 0, and leaving row n uninitialised, so MXNet's mask features hold stray "
    "zeros and old memory; symgraph writes zeros there. Ids, scores and boxes match")


def _mask_defect(graph: dict, outs, want) -> str | None:
    """The ROIAlign defect explains a mismatch of Mask R-CNN's masks when the detections
    (the first three outputs) match, up to the order of ties."""
    ops = symbol_ops(graph)
    if len(outs) != 4 or "_contrib_ROIAlign" not in ops or "where" not in ops:
        return None
    if _same_detections(outs, want):  # masks too, once equal-score rows are aligned
        return None
    if all(common.compare(g, w)[0] for g, w in zip(outs[:3], want[:3])) or \
            _same_detections(outs[:3], want[:3]):
        return ROIALIGN_DEFECT
    return None


def _float64_outputs(mx, graph_json: str, graph: dict, io: dict, params_path, tmp):
    """symgraph's outputs with every parameter and input in float64, or None when the graph
    does not run in float64 (a float32 constant inside, say)."""
    _, params_path = _files(mx, graph_json, graph, io, params_path, tmp)
    try:
        saved = mx.nd.load(params_path)
        args = {k[4:]: v.astype("float64") for k, v in saved.items() if k.startswith("arg:")}
        aux = {k[4:]: v.astype("float64") for k, v in saved.items() if k.startswith("aux:")}
        args.update({n: mx.nd.array(v, dtype="float64")
                     for n, v in _model_inputs(graph, io).items()})
        exe = mx.sym.load_json(common.widen_json(graph_json)).bind(mx.cpu(), args,
                                                                  aux_states=aux)
        return [o.asnumpy() for o in exe.forward()]
    except Exception:  # no float64 verdict for this graph
        return None


def _float64_verdict(exact, io64: dict | None, rec: dict) -> str | None:
    """Why a model whose float32 outputs differ (``rec``) is still MXNet's computation, or
    None: its float64 outputs (``exact``) match MXNet's float64 outputs (``io64``, from
    ``float64.py``), as given or up to the order of equal-score detections."""
    if exact is None or not io64 or len(io64) != len(exact):
        return None
    want = [io64[f"out{i}"] for i in range(len(io64))]
    if all(common.compare(g, w)[0] for g, w in zip(exact, want)):
        how = "equal"
    else:
        how = _same_detections(exact, want)
        if how is None:
            return None
    worst = max(rec.get("errors") or [0.0])
    if rec["status"] == "mxnet defect":
        why = "MXNet's CPU ROIAlign leaves rows uninitialised, see float64.py"
    elif _detection_rows(exact) is not None:
        why = "near-equal scores ordered apart by rounding"
    else:
        why = "rounding, amplified by the net's depth"
    return (f"float64: symgraph's and MXNet's float64 outputs match ({how}); in float32 "
            f"worst {worst:.2g} ({why})")


def _rounding_verdict(exact, outs, want) -> str | None:
    """Why outputs that differ from MXNet's are float32 rounding, or None: against the
    float64 result (``exact``), symgraph's float32 outputs are at most as far off as MXNet's
    own (deep, badly conditioned nets amplify rounding in both)."""
    if exact is None or len(exact) != len(outs):
        return None
    ours = [common.compare(o, e)[1] for o, e in zip(outs, exact)]
    theirs = [common.compare(w, e)[1] for w, e in zip(want, exact)]
    if all(o <= max(1.5 * t, 1e-4) for o, t in zip(ours, theirs)):
        return (f"float32 rounding: from the float64 result, symgraph is off by "
                f"{max(ours):.2g} and MXNet by {max(theirs):.2g}")
    return None


def check_model(mx, graph_json: str, io: dict, params_path: str | None = None,
                workdir: str | None = None, io64: dict | None = None) -> dict:
    """symgraph on one exported model: ``status`` (``match``, ``mismatch``, ``missing op``,
    ``load error``, ``run error``), ``missing`` ops, ``error``, per-output ``errors``
    (worst error relative to MXNet's largest magnitude). Without ``params_path`` the
    parameters are rebuilt by formula into files under ``workdir``. ``io64``: MXNet's
    float64 outputs (``float64.py``), the last word on a float32 mismatch."""
    graph = json.loads(graph_json)
    rec = {"missing": missing_ops(graph), "ops": len(symbol_ops(graph))}
    if rec["missing"]:  # loading stops at the first one anyway
        rec["status"] = "missing op"
        return rec
    status, err, outs = _load_and_run(mx, graph_json, graph, io, params_path, workdir)
    if err is not None:
        rec["error"] = f"{type(err).__name__}: {str(err)[:300]}"
        rec["status"] = status
        return rec
    want = [io[f"out{i}"] for i in range(len([k for k in io if k.startswith("out")]))]
    if len(outs) != len(want):
        rec.update(status="mismatch", error=f"{len(outs)} outputs, MXNet has {len(want)}")
        return rec
    results = [common.compare(g, w) for g, w in zip(outs, want)]
    rec["errors"] = [e for _, e in results]
    shapes_ok = all(g.shape == w.shape for g, w in zip(outs, want))
    rec["status"] = "match" if all(ok for ok, _ in results) else "mismatch"
    tie = rec["status"] == "mismatch" and shapes_ok and _same_detections(outs, want)
    if tie:
        rec.update(status="match", note=tie)
    defect = rec["status"] == "mismatch" and shapes_ok and _mask_defect(graph, outs, want)
    if defect:
        rec.update(status="mxnet defect", note=defect)
    if rec["status"] != "match" and shapes_ok:
        exact = _float64_outputs(mx, graph_json, graph, io, params_path, workdir)
        verdict = _float64_verdict(exact, io64, rec)
        if not verdict and rec["status"] == "mismatch":
            verdict = _rounding_verdict(exact, outs, want)
        if verdict:
            rec.update(status="match", note=verdict)
    if not shapes_ok:
        rec["error"] = "shapes " + str([list(g.shape) for g in outs])
    return rec


def worker(names: list[str], family_dir: str) -> None:
    import numpy as np

    import symgraph as mx
    log = os.path.join(family_dir, "check.jsonl")
    for name in names:
        common.log_start(log, name)
        t0 = time.time()
        prefix = os.path.join(family_dir, name)
        with open(prefix + "-symbol.json") as f:
            graph_json = f.read()
        io = dict(np.load(prefix + "-io.npz"))
        params = prefix + "-0000.params"  # absent: rebuilt from the formula (as in CI)
        wide = prefix + "-io64.npz"
        io64 = dict(np.load(wide)) if os.path.exists(wide) else None
        with tempfile.TemporaryDirectory() as tmp:
            rec = check_model(mx, graph_json, io, params if os.path.exists(params) else None,
                              tmp, io64)
        rec.update(name=name, family=common.family(name), seconds=round(time.time() - t0, 2))
        common.log_result(log, rec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exports")
    ap.add_argument("--doc")
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--family", choices=common.FAMILIES)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--fresh", action="store_true", help="forget earlier check records")
    ap.add_argument("--worker", metavar="FAMILY_DIR")
    args = ap.parse_args()
    if args.worker:
        worker(args.models, args.worker)
        return
    for fam in common.FAMILIES:
        family_dir = os.path.join(args.exports, fam)
        if args.family not in (None, fam) or not os.path.isdir(family_dir):
            continue
        made, _ = common.read_log(os.path.join(family_dir, "results.jsonl"))
        if args.fresh and os.path.exists(os.path.join(family_dir, "check.jsonl")):
            os.remove(os.path.join(family_dir, "check.jsonl"))
        names = [n for n, r in made.items() if r.get("exported")
                 and (not args.models or n in args.models)]
        common.drive([sys.executable, __file__, "--worker", family_dir, "--models"], names,
                     os.path.join(family_dir, "check.jsonl"), args.timeout)
    if args.doc:
        import report
        report.write(args.exports, args.doc)


if __name__ == "__main__":
    main()
