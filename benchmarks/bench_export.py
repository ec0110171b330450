"""Inference latency of an exported model: symgraph's executor, the PyTorch module of
``symgraph.export.to_torch`` (eager and under ``torch.compile``) and ONNX Runtime on the file
``mx.onnx.export_model`` writes, measured side by side in one process on the same inputs.

Models: an MLP (784-512-512-10, batch 64), ResNet-18 v1 at 64x64 (batch 8), and the
bucketing LSTM language model of the demo at one bucket (2 fused LSTM layers, hidden and
embedding 200, vocabulary 10,000, 32 steps, batch 32). Ratios are against the executor
(above 1: the peer is faster).

    python -m symgraph.bench export [--steps 30] [--json benchmarks/results/export_cpu.json]
"""
from __future__ import annotations

import argparse
import datetime
import json
import tempfile
import time
import types

import numpy as np
import torch

import symgraph as mx


def mlp():
    x = mx.sym.var("data")
    for i, h in enumerate((512, 512)):
        x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=h, name=f"fc{i}"),
                              act_type="relu")
    x = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(x, num_hidden=10, name="out"),
                             name="softmax")
    return x, {"data": (64, 784)}, {}


def resnet18():
    net = mx.gluon.model_zoo.vision.get_model("resnet18_v1", classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(mx.nd.zeros((8, 3, 64, 64)))
    return net._cached_graph[1], {"data": (8, 3, 64, 64)}, {}


def lstm_bucket():
    from symgraph.examples.lstm_bucketing import make_sym_gen
    args = types.SimpleNamespace(cell="fused", hidden=200, embed=200, layers=2)
    sym, _, _ = make_sym_gen(10000, args)(32)
    return sym, {"data": (32, 32)}, {"data": 10000}


MODELS = {"mlp": mlp, "resnet18_64px": resnet18, "lstm_bucket32": lstm_bucket}


def _with_label(sym, shapes: dict) -> dict:
    """The data shapes and, for a loss head's label, its shape (one label per position)."""
    known = dict(shapes)
    names = sym.list_arguments()
    if "softmax_label" in names:  # inferred, or (a reshaped label) one per data position
        inferred = dict(zip(names, sym.infer_shape_partial(**shapes)[0]))["softmax_label"]
        known["softmax_label"] = inferred or next(iter(shapes.values()))
    return known


def _params(sym, shapes):
    arg_shapes, _, aux_shapes = sym.infer_shape(**_with_label(sym, shapes))
    rng = np.random.RandomState(0)
    args = {n: mx.nd.array(rng.uniform(-0.05, 0.05, s)) for n, s in
            zip(sym.list_arguments(), arg_shapes) if n not in shapes and not
            n.endswith("label")}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.5, s)) for n, s in
           zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _timeit(fn, steps: int) -> float:
    """Median seconds per call after warm-up."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure(name: str, steps: int) -> dict:
    import onnxruntime as ort

    from symgraph.export import to_torch
    sym, shapes, ints = MODELS[name]()
    args, aux = _params(sym, shapes)
    rng = np.random.RandomState(1)
    data = {k: (rng.randint(0, ints[k], s) if k in ints else rng.uniform(-1, 1, s))
            .astype(np.float32) for k, s in shapes.items()}
    exe = sym.simple_bind(mx.cpu(), grad_req="null", **_with_label(sym, shapes))
    exe.copy_params_from(args, aux)
    for k, v in data.items():
        exe.arg_dict[k][:] = v
    module = to_torch(sym, args, aux, input_shapes=_with_label(sym, shapes)).eval()
    tdata = {k: torch.tensor(v) for k, v in data.items()}
    compiled = torch.compile(module)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/model.onnx"
        mx.onnx.export_model(sym, {**args, **aux}, list(shapes.values()), np.float32, path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = exe.forward(is_train=False)[0].asnumpy()
    with torch.no_grad():
        checks = {"torch_eager": module(**tdata), "torch_compile": compiled(**tdata)}
        checks = {k: float(np.abs(v.numpy() - want).max()) for k, v in checks.items()}
    checks["onnxruntime"] = float(np.abs(sess.run(None, data)[0] - want).max())
    with torch.no_grad():
        ms = {"symgraph_executor": _timeit(lambda: exe.forward(is_train=False)[0].wait_to_read(),
                                           steps),
              "torch_eager": _timeit(lambda: module(**tdata), steps),
              "torch_compile": _timeit(lambda: compiled(**tdata), steps),
              "onnxruntime": _timeit(lambda: sess.run(None, data), steps)}
    base = ms["symgraph_executor"]
    return {"model": name, "inputs": {k: list(v) for k, v in shapes.items()},
            "ms": {k: round(v * 1e3, 3) for k, v in ms.items()},
            "speedup_vs_executor": {k: round(base / v, 3) for k, v in ms.items()},
            "max_abs_diff_vs_executor": checks}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    results = []
    for name in args.models:
        r = measure(name, args.steps)
        results.append(r)
        cells = "  ".join(f"{k} {v:8.3f} ms ({r['speedup_vs_executor'][k]:.2f}x)"
                          for k, v in r["ms"].items())
        print(f"{name:14s} {cells}", flush=True)
    if args.json:
        from benchmarks.bench_mlp import commit
        from symgraph.fileio import atomic_write
        head = commit()
        record = {"device": f"cpu ({torch.get_num_threads()} threads)",
                  "date": datetime.date.today().isoformat(), "commit": head,
                  "torch": torch.__version__, "results": results}
        atomic_write(args.json, (json.dumps(record, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
