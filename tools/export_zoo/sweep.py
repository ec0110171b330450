"""Every ``gluon.model_zoo.vision`` architecture through both exports: ONNX (checked by the
ONNX checker, run in ONNX Runtime) and a PyTorch module (forward and parameter gradients
against the executor, ``torch.compile`` with inductor), each compared with symgraph's
executor on the same seeded input and parameters.

    python tools/export_zoo/sweep.py --out /tmp/zoo.jsonl --doc docs/export_zoo.md

``tests/test_export_zoo.py`` runs :func:`check_model` on a few small architectures in CI.
Errors are relative to the largest magnitude of the compared values.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import pathlib
import sys
import tempfile
import time
import traceback

import numpy as np

# the smallest input each architecture accepts
SIZES = {"inceptionv3": 299, "squeezenet1.0": 224, "squeezenet1.1": 224, "densenet121": 224,
         "densenet161": 224, "densenet169": 224, "densenet201": 224}
DEFAULT_SIZE = 64  # 2x2 pixels per sample in the last stage: batch statistics stay well conditioned
TOL = 1e-4
# a float32 result that misses symgraph's float32 output is still accepted when its distance
# from the float64 result is at most this, or twice symgraph's own (docs/model_zoo.md's
# tolerance against MXNet): deep nets amplify float32 rounding, more in some runtimes
ROUNDING_TOL = 1e-3
# ... provided symgraph's own float32 output is within this of float64: beyond it a discrete
# choice (top-k, NMS) flipped, and distances from float64 judge nothing
CONTINUOUS = 1e-2
# training is compared in float64 unless its values would pass this (bytes, every node's
# output in float64) and no BatchNorm uses batch statistics, the amplifier float64 is there
# for: the C4 Mask R-CNNs run their last stage on every sampled ROI (38 GB for
# ResNet-50 at 256x256), and freeze their BatchNorms
FLOAT64_TRAIN_BYTES = 19.5e9  # on a 24 GB machine: faster_rcnn_resnet101_v1d (19.8) did not fit


@functools.cache
def _scenarios():
    path = pathlib.Path(__file__).resolve().parents[2] / "tests/fixtures/model_zoo/scenarios.py"
    spec = importlib.util.spec_from_file_location("zoo_scenarios", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def param_value(name: str, shape) -> np.ndarray:
    """A value for parameter ``name``, seeded by its name: the model-zoo fixtures' formula
    (``tests/fixtures/model_zoo/scenarios.py``)."""
    return _scenarios().param_value(name, shape)


def build(mx, name: str, batch: int = 2):
    """(symbol, arg_params, aux_params, input) of architecture ``name`` with 10 classes."""
    net = mx.gluon.model_zoo.vision.get_model(name, classes=10)
    size = SIZES.get(name, DEFAULT_SIZE)
    x = np.random.RandomState(7).uniform(-1, 1, (batch, 3, size, size)).astype(np.float32)
    net.initialize()
    net.hybridize()
    net(mx.nd.array(x))
    sym = net._cached_graph[1]
    aux_names = set(sym.list_auxiliary_states())
    args, aux = {}, {}
    for p in net.collect_params().values():
        value = mx.nd.array(param_value(p.name, p.shape))
        (aux if p.name in aux_names else args)[p.name] = value
    return sym, args, aux, x


def _err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    if want.size == 0:
        return 0.0
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-12))


def _outputs(out) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def run_executor(mx, sym, args, aux, inputs: dict, train: bool = True, heads_seed: int = 5):
    """symgraph's executor: float32 inference outputs and (``train``) float64 training
    outputs, head gradients, parameter gradients and the graph trained (``sym``, or where it
    fixes float32 inside, the graph widened). Training is compared in float64: batch
    statistics of a batch of one amplify float32 rounding through deep nets."""
    exe = sym.simple_bind(mx.cpu(), **{k: v.shape for k, v in inputs.items()})
    exe.copy_params_from(args, aux)
    infer = [o.asnumpy() for o in exe.forward(is_train=False, **inputs)]
    if not train:
        return infer, None, None, None, sym
    wide = _wide_inputs(inputs)
    types = _float64_types(wide, args, aux)
    binds = ((sym, wide, types), (None, wide, types), (sym, inputs, {}))
    for graph, feed, dtypes in binds[2:] if _train_in_float32(mx, sym, inputs) else binds:
        graph = _widened(mx, sym) if graph is None else graph  # fixing float32: widened
        try:
            exe = graph.simple_bind(mx.cpu(), type_dict=dtypes,
                                    **{k: v.shape for k, v in feed.items()})
            break
        except mx.MXNetError:  # an op without float64: float32 as a last resort
            continue
    wide = feed
    exe.copy_params_from(args, aux)
    exe._rt.generator.manual_seed(0)
    outs = [o.asnumpy() for o in exe.forward(is_train=True, **wide)]
    rng = np.random.RandomState(heads_seed)
    heads = [rng.uniform(-1, 1, o.shape).astype(o.dtype) if o.dtype.kind == "f" else
             np.zeros(o.shape, o.dtype) for o in outs]
    exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
    grads = {k: exe.grad_dict[k].asnumpy() for k in args if exe.grad_dict.get(k) is not None}
    return infer, outs, heads, grads, graph


def _float64_bytes(sym, inputs: dict) -> int:
    """Every node output of ``sym`` in float64, in bytes."""
    _, shapes, _ = sym.get_internals().infer_shape(**{k: v.shape for k, v in inputs.items()})
    return 8 * sum(int(np.prod(s)) for s in shapes if s is not None)


def _train_in_float32(mx, sym, inputs: dict) -> bool:
    """Training is checked in float32 where float64 would not fit (FLOAT64_TRAIN_BYTES) and
    every BatchNorm uses its global statistics."""
    nodes = json.loads(sym.tojson())["nodes"]
    frozen = all(str(n.get("attrs", {}).get("use_global_stats", "False")).lower()
                 in ("true", "1") for n in nodes if n["op"] == "BatchNorm")
    return frozen and _float64_bytes(sym, inputs) > FLOAT64_TRAIN_BYTES


def check_onnx(mx, sym, args, aux, inputs: dict, want: list, workdir: str,
               same=None) -> dict:
    """ONNX checker and ONNX Runtime against ``want``; ``same(got, want)`` may accept
    outputs that differ only where float rounding decides (detections at tied scores)."""
    import onnx
    import onnxruntime as ort
    path = f"{workdir}/model.onnx"
    mx.onnx.export_model(sym, {**args, **aux}, [v.shape for v in inputs.values()],
                         [v.dtype for v in inputs.values()], path)
    onnx.checker.check_model(path, full_check=True)
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)
    err = max(_err(g, w) for g, w in zip(got, want)) if len(got) == len(want) else float("inf")
    rec = {"onnx_error": err, "_onnx_out": got}
    if err > TOL and same is not None and same(got, want):
        rec.update(onnx_error=0.0, onnx_note=same(got, want))
    return rec


def check_torch(mx, sym, args, aux, inputs: dict, executor, compile_: str | None) -> dict:
    """The PyTorch module: training forward and parameter gradients against the executor,
    inference forward, and ``torch.compile`` with backend ``compile_`` (None: skipped)."""
    import torch

    from symgraph.export import to_torch
    infer, train, heads, grads, train_sym = executor
    tin = {k: torch.tensor(v) for k, v in inputs.items()}
    shapes = {k: v.shape for k, v in inputs.items()}
    rec = {}
    if train is not None:
        wide, params = tin, (args, aux)
        if any(o.dtype == np.float64 for o in train):  # the executor trained in float64
            wide = {k: v.double() if v.dtype == torch.float32 else v for k, v in tin.items()}
            params = _wide_params(args, aux)
        m = to_torch(train_sym, *params, input_shapes=shapes,
                     input_types={k: v.numpy().dtype for k, v in wide.items()})
        torch.manual_seed(0)  # the executor's dropout masks: the same seed, the same draws
        outs = _outputs(m.train()(**wide))
        rec["torch_train_error"] = max(_err(o.detach().numpy(), t) for o, t in zip(outs, train))
        pairs = [(o, torch.tensor(h)) for o, h in zip(outs, heads) if o.requires_grad]
        if pairs and grads:
            torch.autograd.backward([o for o, _ in pairs], [h for _, h in pairs])
            params = {m.mxnet_names.get(k, k): v for k, v in m.named_parameters()}
            scale = max(float(np.abs(g).max()) for g in grads.values()) or 1.0
            rec["torch_grad_error"] = max(
                float(np.abs((params[k].grad.numpy() if params[k].grad is not None else 0)
                             - g).max()) for k, g in grads.items()) / scale
        del outs, pairs, m  # the training graph's values: not held through the rest
    m = to_torch(sym, args, aux, input_shapes=shapes).eval()  # fresh moving statistics
    with torch.no_grad():
        got = [o.numpy() for o in _outputs(m(**tin))]
        rec.update(torch_infer_error=max(_err(o, w) for o, w in zip(got, infer)),
                   _torch_infer_out=got)
        if compile_:
            compiled = torch.compile(m, backend=compile_)
            got = [o.numpy() for o in _outputs(compiled(**tin))]
            rec.update(torch_compile_error=max(_err(o, w) for o, w in zip(got, infer)),
                       _torch_compile_out=got)
    return rec


def _widened(mx, sym):
    """The graph with its float32 constants and casts made float64
    (``tools/gluoncv_zoo/gcvzoo_common.widen_json``)."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "gluoncv_zoo"))
    from gcvzoo_common import widen_json
    return mx.sym.load_json(widen_json(sym.tojson()))


def _float64_truth(mx, sym, args, aux, inputs: dict):
    """(the executor's float64 outputs, the graph that gave them): the graph itself, or
    where it fixes float32 inside (detectors' casts and aranges) the graph widened; (None,
    None) when neither binds in float64."""
    wide = _wide_inputs(inputs)
    types = _float64_types(wide, args, aux)
    for graph in (sym, None):
        graph = _widened(mx, sym) if graph is None else graph
        try:
            exe = graph.simple_bind(mx.cpu(), grad_req="null", type_dict=types,
                                    **{k: v.shape for k, v in wide.items()})
        except mx.MXNetError:  # a graph fixing float32 inside: try it widened
            continue
        exe.copy_params_from(args, aux)
        return [o.asnumpy() for o in exe.forward(is_train=False, **wide)], graph
    return None, None


def rounding_verdict(mx, sym, args, aux, inputs: dict, infer: list, rec: dict,
                     same=None) -> None:
    """Where a float32 output misses symgraph's float32 output, accept it when it is as close
    to the float64 result as symgraph's own float32 output is (deep nets amplify rounding;
    ``docs/model_zoo.md`` applies the same rule against MXNet); else for ONNX Runtime when
    it matches with the discrete ops' inputs fed (:func:`cut_verdict`), for the module when
    it matches in float64."""
    keys = [k for k in ("onnx", "torch_infer", "torch_compile")
            if rec.get(f"{k}_error", 0.0) > TOL and f"_{k}_out" in rec]
    if not keys:
        return
    truth, sym64 = _float64_truth(mx, sym, args, aux, inputs)
    if truth is None:
        return
    own = max(_err(o, t) for o, t in zip(infer, truth))
    for k in keys:
        theirs = max(_err(o, t) for o, t in zip(rec[f"_{k}_out"], truth))
        if own <= CONTINUOUS and theirs <= max(2 * own, ROUNDING_TOL):
            rec[f"{k}_note"] = (f"float32 rounding: {rec[f'{k}_error']:.1e} from symgraph's "
                                f"float32; {theirs:.1e} from float64 (symgraph's float32: "
                                f"{own:.1e})")
            rec[f"{k}_error"] = theirs if theirs <= TOL else 0.0
            continue
        if k == "onnx":
            verdict = cut_verdict(mx, sym, args, aux, inputs, infer, same)
            if verdict:
                rec["onnx_error"], rec["onnx_note"] = verdict
            elif (cond := conditioning(mx, sym, args, aux, inputs)) is not None:
                rec["onnx_note"] = cond
            elif own > CONTINUOUS and not _has_discrete(sym):
                rec["onnx_note"] = (f"no verdict: float32 is ill-conditioned here: symgraph's "
                                    f"own float32 is {own:.1e} from its float64, ONNX "
                                    f"Runtime's {theirs:.1e}")
            continue
        got = _torch_float64(mx, sym64, args, aux, inputs)
        wide = max(_err(o, t) for o, t in zip(got, truth)) if len(got) == len(truth) else 1.0
        if wide <= TOL:
            widened = "" if sym64 is sym else " (its float32 casts and constants widened)"
            rec[f"{k}_note"] = (f"float32 rounding: {rec[f'{k}_error']:.1e} in float32; the "
                                f"module on the graph in float64{widened} is {wide:.1e} from "
                                "the executor's float64")
            rec[f"{k}_error"] = wide


def _wide_params(args: dict, aux: dict) -> list[dict]:
    """(args, aux) with every float32 parameter in float64."""
    return [{k: v.astype("float64") if v.dtype == np.float32 else v for k, v in d.items()}
            for d in (args, aux)]


def _float64_types(wide: dict, args: dict, aux: dict) -> dict:
    """A bind's type_dict: the (widened) inputs' dtypes, float32 parameters as float64."""
    types = {k: v.dtype for k, v in wide.items()}
    types.update({k: np.float64 for k, v in {**args, **aux}.items() if v.dtype == np.float32})
    return types


def _wide_inputs(inputs: dict) -> dict:
    return {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in inputs.items()}


def _torch_float64(mx, sym, args, aux, inputs: dict) -> list:
    """The PyTorch module's inference outputs in float64."""
    import torch

    from symgraph.export import to_torch
    wide = _wide_inputs(inputs)
    params = _wide_params(args, aux)
    m = to_torch(sym, *params, input_shapes={k: v.shape for k, v in inputs.items()},
                 input_types={k: v.dtype for k, v in wide.items()}).eval()
    with torch.no_grad():
        out = m(**{k: torch.tensor(v) for k, v in wide.items()})
        return [o.numpy() for o in _outputs(out)]


# ops whose output is a discrete choice on their inputs' values (orders, top-k cuts, NMS)
_COMPARE = ("equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal")
DISCRETE = ("_contrib_box_nms", "topk", "sort", "argsort", "argmax", "argmin",
            "_contrib_MultiBoxDetection", *(f"_{c}" for c in _COMPARE),
            *(f"_{c}_scalar" for c in _COMPARE), *(f"broadcast_{c}" for c in _COMPARE))


def _cut_graph(graph_json: str) -> tuple[str, list, list]:
    """The graph with every input of a :data:`DISCRETE` op read from a new variable, and the
    values those inputs had as extra outputs after the graph's own: (its JSON, the
    variables' names, the (node, output) entries they replace)."""
    graph = json.loads(graph_json)
    nodes, cuts, names = graph["nodes"], {}, []
    for node in list(nodes):
        if node["op"] not in DISCRETE:
            continue
        for slot, entry in enumerate(node["inputs"]):
            key = (entry[0], entry[1])
            if key not in cuts:
                # numbered: GluonCV graphs repeat node names
                names.append(f"cut{len(names)}_{nodes[entry[0]]['name']}_out{entry[1]}")
                nodes.append({"op": "null", "name": names[-1], "inputs": []})
                graph["arg_nodes"].append(len(nodes) - 1)
                cuts[key] = len(nodes) - 1
            node["inputs"][slot] = [cuts[key], 0, 0]
    graph["heads"] += [[nid, out, 0] for nid, out in cuts]
    graph.pop("node_row_ptr", None)
    return json.dumps(graph), names, list(cuts)


def cut_verdict(mx, sym, args, aux, inputs: dict, want: list, same=None):
    """(error, note) when ONNX Runtime's float32 outputs match the executor's once every
    discrete op reads the executor's values for its inputs, and ONNX Runtime's own values
    for those inputs (computed from the fed values upstream) are within ROUNDING_TOL of
    the executor's: each continuous stretch then differs by rounding only, and what
    differed was a choice rounding flipped. Else None."""
    import onnxruntime as ort
    graph_json = sym.tojson()
    cut_json, names, entries = _cut_graph(graph_json)
    if not names:
        return None
    heads = json.loads(graph_json)
    heads["heads"] = [[nid, out, 0] for nid, out in entries]
    exe = mx.sym.load_json(json.dumps(heads)).simple_bind(
        mx.cpu(), grad_req="null", **{k: v.shape for k, v in inputs.items()})
    exe.copy_params_from(args, aux, allow_extra_params=True)
    fed = dict(inputs)
    fed.update({n: o.asnumpy() for n, o in zip(names, exe.forward(is_train=False, **inputs))})
    cut = mx.sym.load_json(cut_json)
    feeds = [k for k in cut.list_arguments() if k in fed]
    with tempfile.TemporaryDirectory() as workdir:
        path = f"{workdir}/cut.onnx"
        mx.onnx.export_model(cut, {**args, **aux}, [fed[k].shape for k in feeds],
                             [fed[k].dtype for k in feeds], path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {i.name: fed[i.name] for i in sess.get_inputs()})
    got, stretches = got[:len(want)], got[len(want):]
    stretch = max(_err(g, fed[n]) for g, n in zip(stretches, names))
    err = max(_err(g, w) for g, w in zip(got, want)) if len(got) == len(want) else 1.0
    how = same(got, want) if err > TOL and same is not None else None
    if stretch > ROUNDING_TOL or (err > TOL and not how):
        return None
    ops = sorted({n["op"] for n in json.loads(cut_json)["nodes"] if n["op"] in DISCRETE})
    return err if err <= TOL else 0.0, (
        f"float32 rounding flips a discrete choice: with the {len(names)} inputs of its "
        f"discrete ops ({', '.join(ops)}) fed the executor's values, ONNX Runtime's outputs "
        f"are {how or f'{err:.1e}'} from the executor's, and its values for those inputs "
        f"{stretch:.1e}")


def _has_discrete(sym) -> bool:
    return any(n["op"] in DISCRETE for n in json.loads(sym.tojson())["nodes"])


def _upstream(nodes: list, first: int) -> list[int]:
    """The non-variable nodes node ``first`` depends on (``nodes`` in topological order)."""
    seen, todo = set(), [e[0] for e in nodes[first]["inputs"]]
    while todo:
        i = todo.pop()
        if i not in seen and nodes[i]["op"] != "null":
            seen.add(i)
            todo += [e[0] for e in nodes[i]["inputs"]]
    return sorted(seen)


def _worst(outs, truth, names) -> tuple[float, str]:
    """The largest relative error of ``outs`` against ``truth`` and where (values whose
    float64 magnitude is below 1e-6 are all rounding and judge nothing)."""
    errs = [(_err(o, t), n) for o, t, n in zip(outs, truth, names)
            if np.abs(np.asarray(t, np.float64)).max(initial=0.0) >= 1e-6]
    return max(errs, default=(0.0, ""))


def conditioning(mx, sym, args, aux, inputs: dict) -> str | None:
    """A note when float32 cannot be judged: upstream of the graph's first discrete op (no
    choice there, so float64 is the truth) some value of symgraph's own float32 is more
    than CONTINUOUS from its float64 one; else None. Every upstream value is compared, not
    only the op's inputs: a saturating op (a clip to the image) can hide an ill-conditioned
    value behind well-conditioned ones."""
    import onnxruntime as ort
    graph = json.loads(sym.tojson())
    first = next((i for i, n in enumerate(graph["nodes"]) if n["op"] in DISCRETE), None)
    if first is None:
        return None
    up = _upstream(graph["nodes"], first)
    names = [graph["nodes"][i]["name"] for i in up]
    graph["heads"] = [[i, 0, 0] for i in up]
    head = mx.sym.load_json(json.dumps(graph))
    used = set(head.list_arguments()) | set(head.list_auxiliary_states())
    args, aux = ({k: v for k, v in d.items() if k in used} for d in (args, aux))
    truth = _float64_truth(mx, head, args, aux, inputs)[0]
    if truth is None:
        return None
    exe = head.simple_bind(mx.cpu(), grad_req="null", **{k: v.shape for k, v in inputs.items()})
    exe.copy_params_from(args, aux)
    own, where = _worst([o.asnumpy() for o in exe.forward(**inputs)], truth, names)
    del exe
    if own <= CONTINUOUS:
        return None
    with tempfile.TemporaryDirectory() as workdir:
        path = f"{workdir}/head.onnx"
        mx.onnx.export_model(head, {**args, **aux}, [v.shape for v in inputs.values()],
                             [v.dtype for v in inputs.values()], path)
        got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)
    theirs = _worst(got, truth, names)[0]
    return (f"no verdict: float32 is ill-conditioned here: upstream of the first discrete "
            f"op ({graph['nodes'][first]['name']}), at {where}, symgraph's own float32 is "
            f"{own:.1e} from its float64, ONNX Runtime's {theirs:.1e}")


def check_model(mx, name: str, compile_: str | None = "inductor") -> dict:
    """Both exports of vision architecture ``name``; a record with errors and a status."""
    def run(rec):
        sym, args, aux, x = build(mx, name)
        rec["input"] = list(x.shape)
        return check_all(mx, sym, args, aux, {"data": x}, compile_, rec)
    return timed_record(name, run)


def check_all(mx, sym, args, aux, inputs: dict, compile_, rec: dict, same=None,
              train: bool = True) -> dict:
    executor = run_executor(mx, sym, args, aux, inputs, train)
    if executor[1] is not None:  # the precision training was compared in
        rec["train_dtype"] = "float64" if any(o.dtype == np.float64 for o in executor[1]) \
            else "float32"
    with tempfile.TemporaryDirectory() as workdir:
        rec.update(check_onnx(mx, sym, args, aux, inputs, executor[0], workdir, same))
    rec.update(check_torch(mx, sym, args, aux, inputs, executor, compile_))
    rounding_verdict(mx, sym, args, aux, inputs, executor[0], rec, same)
    for k in [k for k in rec if k.startswith("_")]:
        del rec[k]
    errors = {k[:-6]: v for k, v in rec.items() if k.endswith("_error")}
    missed = [k for k, v in errors.items() if v > TOL]
    if not missed:
        rec["status"] = "match"
    elif all(rec.get(f"{k}_note", "").startswith("no verdict") for k in missed):
        rec["status"] = "ill-conditioned"  # listed by name as an exception, not a match
    else:
        rec["status"] = "mismatch"
    return rec


def timed_record(name: str, run) -> dict:
    """``run(rec)`` filling a record for ``name``; a failure is recorded, not raised."""
    rec = {"model": name}
    start = time.time()
    try:
        run(rec)
    except Exception as err:  # the sweep records every failure and goes on
        rec["status"] = "error"
        rec["error"] = f"{type(err).__name__}: {err}"[:500]
        rec["trace"] = traceback.format_exc(limit=-4)[-1500:]
    for key in [k for k in rec if k.startswith("_")]:  # raw outputs of a partial check
        del rec[key]
    rec["seconds"] = round(time.time() - start, 1)
    return rec


VISION_INTRO = (
    "Every `gluon.model_zoo.vision` architecture (10 classes, seeded parameters) exported to "
    "ONNX (ONNX checker, ONNX Runtime) and converted to a PyTorch module (forward in "
    "training and inference mode, parameter gradients, `torch.compile` with inductor), each "
    "compared with symgraph's executor. Regenerate with `python tools/export_zoo/sweep.py "
    "--doc docs/export_zoo.md`.")


def write_doc(records: list[dict], path: str, title: str = "Model-zoo export sweep",
              intro: str = VISION_INTRO, extra: list[str] = ()) -> None:
    """A Markdown page of the records: counts (and ``extra`` lines after them), one row per
    model, the notes."""
    ok = sum(r["status"] == "match" for r in records)
    unjudged = [r["model"] for r in records if r["status"] == "ill-conditioned"]
    summary = f"**{ok} of {len(records)} architectures match.**"
    if unjudged:
        summary += (f" {len(unjudged)} more {'is' if len(unjudged) == 1 else 'are'} "
                    "ill-conditioned in float32 with these "
                    f"parameters, so no float32 verdict can be made: {', '.join(unjudged)}.")
    lines = [f"# {title}", "", intro, "",
             "Errors are the largest difference relative to the largest magnitude; **match** "
             f"means all are at most {TOL:g}. Training forward and gradients are compared in "
             "float64. A float32 output that misses is judged against the float64 result: "
             f"within {ROUNDING_TOL:g} of it (or twice symgraph's own float32 distance), "
             f"while symgraph's own float32 is within {CONTINUOUS:g} of float64; or the "
             f"PyTorch module in float64 within {TOL:g}; or, where a discrete op (top-k, NMS, "
             "a comparison) flipped, with every discrete op fed the executor's values. Where "
             "symgraph's own float32 is further than that from float64 before any choice, "
             "the model is **ill-conditioned** (no verdict). The notes say which rule "
             "applied.", "", summary, "", *extra,
             "| model | input | ONNX Runtime | torch train | torch grads | torch eval | "
             "torch.compile | status |", "|---|---|---|---|---|---|---|---|"]
    keys = ("onnx_error", "torch_train_error", "torch_grad_error", "torch_infer_error",
            "torch_compile_error")
    notes = []
    for r in records:
        cells = [f"{r[k]:.1e}" if k in r else "-" for k in keys]
        status = r["status"] if r["status"] != "error" else f"error: {r['error'][:80]}"
        shape = r.get("input") or next(iter(r.get("inputs", {}).values()), [])
        dims = "x".join(str(d) for d in shape)
        lines.append(f"| {r['model']} | {dims} | " + " | ".join(cells) + f" | {status} |")
        notes += [f"- {r['model']}: {v}" for k, v in r.items() if k.endswith("_note")]
    if notes:
        lines += ["", "## Notes", ""] + notes
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/export_zoo.jsonl")
    ap.add_argument("--doc", default=None)
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--compile", default="inductor",
                    help="torch.compile backend ('none' skips it)")
    args = ap.parse_args(argv)
    import symgraph as mx
    from symgraph.gluon.model_zoo import vision
    names = args.models or sorted(vision._MODELS)
    records = []
    with open(args.out, "w") as f:
        for name in names:
            rec = check_model(mx, name, None if args.compile == "none" else args.compile)
            records.append(rec)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            print(name, rec["status"], rec.get("error", ""), rec["seconds"], flush=True)
    if args.doc:
        write_doc(records, args.doc)
    return 0 if all(r["status"] == "match" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
