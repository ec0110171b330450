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
import json
import pathlib
import sys
import tempfile
import time
import traceback
import zlib

import numpy as np

# the smallest input each architecture accepts
SIZES = {"inceptionv3": 299, "squeezenet1.0": 224, "squeezenet1.1": 224, "densenet121": 224,
         "densenet161": 224, "densenet169": 224, "densenet201": 224}
DEFAULT_SIZE = 64  # 2x2 pixels per sample in the last stage: batch statistics stay well conditioned
TOL = 1e-4


def param_value(name: str, shape) -> np.ndarray:
    """A value for parameter ``name``, seeded by its name (positive variances)."""
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    if name.endswith(("running_var", "gamma")):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if name.endswith(("running_mean", "beta", "bias")):
        return rng.uniform(-0.1, 0.1, shape).astype(np.float32)
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


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
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-12))


def _executor(mx, sym, args, aux, x, heads_seed: int = 5):
    """Inference outputs, training outputs and gradients from symgraph's executor."""
    exe = sym.simple_bind(mx.cpu(), data=x.shape)
    exe.copy_params_from(args, aux)
    infer = exe.forward(is_train=False, data=x)[0].asnumpy()
    exe._rt.generator.manual_seed(0)
    train = exe.forward(is_train=True, data=x)[0].asnumpy()
    head = np.random.RandomState(heads_seed).uniform(-1, 1, train.shape).astype(np.float32)
    exe.backward([mx.nd.array(head)])
    grads = {k: exe.grad_dict[k].asnumpy() for k in args}
    return infer, train, head, grads


def check_onnx(mx, sym, args, aux, x, want, workdir: str) -> dict:
    import onnx
    import onnxruntime as ort
    path = f"{workdir}/model.onnx"
    mx.onnx.export_model(sym, {**args, **aux}, [x.shape], np.float32, path)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"data": x})[0]
    return {"onnx_error": _err(got, want)}


def check_torch(mx, sym, args, aux, x, executor, compile_: bool = True) -> dict:
    import torch

    from symgraph.export import to_torch
    infer, train, head, grads = executor
    m = to_torch(sym, args, aux)
    torch.manual_seed(0)  # the executor's dropout masks: the same seed, the same draws
    out = m.train()(torch.tensor(x))
    out.backward(torch.tensor(head))
    params = dict(m.named_parameters())
    scale = max(float(np.abs(g).max()) for g in grads.values())  # gradients near 0 are noise
    rec = {"torch_train_error": _err(out.detach().numpy(), train),
           "torch_grad_error": max(float(np.abs(params[k].grad.numpy() - g).max())
                                   for k, g in grads.items()) / scale}
    m = to_torch(sym, args, aux).eval()  # fresh moving statistics
    with torch.no_grad():
        rec["torch_infer_error"] = _err(m(torch.tensor(x)).numpy(), infer)
        if compile_:
            compiled = torch.compile(m)
            rec["torch_compile_error"] = _err(compiled(torch.tensor(x)).numpy(), infer)
    return rec


def check_model(mx, name: str, compile_: bool = True) -> dict:
    """Both exports of ``name``; a record with the errors and a status."""
    rec = {"model": name}
    start = time.time()
    try:
        sym, args, aux, x = build(mx, name)
        rec["input"] = list(x.shape)
        executor = _executor(mx, sym, args, aux, x)
        with tempfile.TemporaryDirectory() as workdir:
            rec.update(check_onnx(mx, sym, args, aux, x, executor[0], workdir))
        rec.update(check_torch(mx, sym, args, aux, x, executor, compile_))
        errors = [v for k, v in rec.items() if k.endswith("_error")]
        rec["status"] = "match" if max(errors) <= TOL else "mismatch"
    except Exception as err:  # the sweep records every failure and goes on
        rec["status"] = "error"
        rec["error"] = f"{type(err).__name__}: {err}"[:500]
        rec["trace"] = traceback.format_exc(limit=-4)[-1500:]
    rec["seconds"] = round(time.time() - start, 1)
    return rec


def write_doc(records: list[dict], path: str) -> None:
    ok = sum(r["status"] == "match" for r in records)
    lines = ["# Model-zoo export sweep", "",
             "Every `gluon.model_zoo.vision` architecture (10 classes, seeded parameters) "
             "exported to ONNX (ONNX checker, ONNX Runtime) and converted to a PyTorch module "
             "(forward in training and inference mode, parameter gradients, `torch.compile` "
             "with inductor), each compared with symgraph's executor. Errors are the largest "
             "difference relative to the largest magnitude; **match** means all are at most "
             f"{TOL:g}. Regenerate with `python tools/export_zoo/sweep.py --doc "
             "docs/export_zoo.md`.", "",
             f"**{ok} of {len(records)} architectures match.**", "",
             "| model | input | ONNX Runtime | torch train | torch grads | torch eval | "
             "torch.compile | status |", "|---|---|---|---|---|---|---|---|"]
    keys = ("onnx_error", "torch_train_error", "torch_grad_error", "torch_infer_error",
            "torch_compile_error")
    for r in records:
        cells = [f"{r[k]:.1e}" if k in r else "-" for k in keys]
        status = r["status"] if r["status"] != "error" else f"error: {r['error'][:80]}"
        shape = "x".join(str(d) for d in r.get("input", []))
        lines.append(f"| {r['model']} | {shape} | " + " | ".join(cells) + f" | {status} |")
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/export_zoo.jsonl")
    ap.add_argument("--doc", default=None)
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args(argv)
    import symgraph as mx
    from symgraph.gluon.model_zoo import vision
    names = args.models or sorted(vision._MODELS)
    records = []
    with open(args.out, "w") as f:
        for name in names:
            rec = check_model(mx, name, not args.no_compile)
            records.append(rec)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            print(name, rec["status"], rec.get("error", ""), rec["seconds"], flush=True)
    if args.doc:
        write_doc(records, args.doc)
    return 0 if all(r["status"] == "match" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
