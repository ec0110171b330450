"""Forward+backward time of an MLP (784-512-512-10, batch 128): symgraph vs PyTorch eager.

Both run side by side in one process on the same inputs and threads; the script prints
each median step time and the ratio symgraph / PyTorch eager, and with ``--json PATH``
writes the result with device, date and commit.

    python -m symgraph.bench mlp [--steps 200] [--json benchmarks/results/mlp_cpu.json]
        [--mxnet-python /path/to/mxnet-venv/bin/python]
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import time

import torch

import symgraph as mx

BATCH, SIZES = 128, (784, 512, 512, 10)


def build_symgraph(ctx=None):
    net = mx.sym.Variable("data")
    for i, h in enumerate(SIZES[1:]):
        net = mx.sym.FullyConnected(net, num_hidden=h, name=f"fc{i + 1}")
        if i < len(SIZES) - 2:
            net = mx.sym.Activation(net, act_type="relu", name=f"relu{i + 1}")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    # as Module binds it: inputs and labels need no gradient, parameters do
    reqs = {n: "null" if n in ("data", "softmax_label") else "write"
            for n in net.list_arguments()}
    exe = net.simple_bind(ctx or mx.cpu(), grad_req=reqs, data=(BATCH, SIZES[0]))
    gen = torch.Generator().manual_seed(0)
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label":
            arr._t.copy_(torch.randint(0, SIZES[-1], (BATCH,), generator=gen).float())
        else:
            arr._t.copy_(torch.randn(arr.shape, generator=gen) * 0.05)
    return exe


def build_torch(exe):
    """The same network and weights in PyTorch eager; loss = summed cross-entropy."""
    layers = []
    for i in range(len(SIZES) - 1):
        lin = torch.nn.Linear(SIZES[i], SIZES[i + 1], device=exe.arg_dict["data"]._t.device)
        with torch.no_grad():
            lin.weight.copy_(exe.arg_dict[f"fc{i + 1}_weight"]._t)
            lin.bias.copy_(exe.arg_dict[f"fc{i + 1}_bias"]._t)
        layers += [lin, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    x = exe.arg_dict["data"]._t.clone()
    y = exe.arg_dict["softmax_label"]._t.long()
    return model, x, y


def step_symgraph(exe):
    exe.forward(is_train=True)
    exe.backward()


def step_torch(model, x, y):
    for p in model.parameters():
        p.grad = None
    loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum")
    loss.backward()


def timeit(fn, steps: int, sync=lambda: None) -> float:
    for _ in range(10):
        fn()
    sync()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


MXNET_SCRIPT = r"""
import statistics, sys, time
import mxnet as mx
batch, sizes, steps = int(sys.argv[1]), [int(v) for v in sys.argv[2].split(",")], int(sys.argv[3])
net = mx.sym.Variable("data")
for i, h in enumerate(sizes[1:]):
    net = mx.sym.FullyConnected(net, num_hidden=h, name="fc%d" % (i + 1))
    if i < len(sizes) - 2:
        net = mx.sym.Activation(net, act_type="relu", name="relu%d" % (i + 1))
net = mx.sym.SoftmaxOutput(net, name="softmax")
reqs = {n: "null" if n in ("data", "softmax_label") else "write" for n in net.list_arguments()}
exe = net.simple_bind(mx.cpu(), grad_req=reqs, data=(batch, sizes[0]))
for name, arr in exe.arg_dict.items():
    arr[:] = mx.nd.random.uniform(0, 1, arr.shape) if name != "softmax_label" else 1
def step():
    exe.forward(is_train=True)
    exe.backward()
    mx.nd.waitall()
for _ in range(10):
    step()
times = []
for _ in range(steps):
    t0 = time.perf_counter(); step(); times.append(time.perf_counter() - t0)
print(statistics.median(times))
"""


def time_mxnet(python: str, steps: int) -> float | None:
    """Median step time of the same network under MXNet 1.9.1 (its own virtualenv), or None."""
    import os
    if not python or not os.path.exists(python):
        return None
    sizes = ",".join(map(str, SIZES))
    out = subprocess.run([python, "-c", MXNET_SCRIPT, str(BATCH), sizes, str(steps)],
                         capture_output=True, text=True, timeout=600, check=False)
    if out.returncode != 0:
        print(f"MXNet peer failed: {out.stderr.strip().splitlines()[-1:]}")
        return None
    return float(out.stdout.strip().splitlines()[-1])


def commit() -> str:
    """The measured commit: ``BENCH_COMMIT`` when set (a copied working tree on a lent GPU
    machine carries a stale ``.git``), else git's HEAD."""
    import os
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    try:  # the checkout the benchmarks come from, whatever the working directory
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], text=True,
                                       cwd=os.path.dirname(os.path.abspath(__file__)),
                                       stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None)
    parser.add_argument("--mxnet-python", default=None,
                        help="python of a virtualenv with mxnet==1.9.1, to time MXNet too")
    parser.add_argument("--gpu", action="store_true",
                        help="run on cuda:0 (symgraph replays the step as a CUDA graph)")
    args = parser.parse_args()
    if args.gpu and not torch.cuda.is_available():
        print("No CUDA device: --gpu needs one; nothing was measured.")
        return
    sync = torch.cuda.synchronize if args.gpu else (lambda: None)
    exe = build_symgraph(mx.gpu() if args.gpu else mx.cpu())
    model, x, y = build_torch(exe)
    sg, pt = [], []
    for _ in range(args.rounds):  # interleave so drift hits both alike
        sg.append(timeit(lambda: step_symgraph(exe), args.steps, sync))
        pt.append(timeit(lambda: step_torch(model, x, y), args.steps, sync))
    sg_t, pt_t = min(sg), min(pt)
    result = {
        "benchmark": "mlp_784_512_512_10_b128_fwd_bwd",
        "device": torch.cuda.get_device_name() if args.gpu else
        f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)",
        "date": datetime.date.today().isoformat(), "commit": commit(),
        "torch": torch.__version__,
        "symgraph_ms": round(sg_t * 1e3, 4), "torch_eager_ms": round(pt_t * 1e3, 4),
        "time_ratio_vs_torch_eager": round(sg_t / pt_t, 4),
        "target": "<= 0.5 (CUDA graph, 2x faster)" if args.gpu else "<= 1.10",
    }
    print(f"symgraph     {sg_t * 1e3:8.3f} ms/step")
    print(f"torch eager  {pt_t * 1e3:8.3f} ms/step")
    print(f"ratio        {sg_t / pt_t:8.3f}x  (target {result['target']})")
    mx_t = time_mxnet(args.mxnet_python, args.steps)
    if mx_t is not None:
        result.update(mxnet_ms=round(mx_t * 1e3, 4), time_ratio_vs_mxnet=round(sg_t / mx_t, 4))
        print(f"mxnet 1.9.1  {mx_t * 1e3:8.3f} ms/step  (symgraph / mxnet {sg_t / mx_t:.3f}x)")
    if args.json:
        from symgraph.symbol.json_io import atomic_write
        atomic_write(args.json, (json.dumps(result, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
