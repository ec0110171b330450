"""Per-step overhead: a deep, tiny MLP (20 layers of width 8, batch 4) where kernel time is
negligible, so the step time is dispatch. Prints symgraph and PyTorch eager fwd+bwd step times,
microseconds per launched kernel, and the ratio.

    python -m symgraph.bench overhead [--layers 20] [--steps 2000] [--json PATH]
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time

import torch

import symgraph as mx
from benchmarks.bench_mlp import commit


def build(layers: int, width: int, batch: int):
    net = mx.sym.Variable("data")
    for i in range(layers):
        net = mx.sym.FullyConnected(net, num_hidden=width, name=f"fc{i}")
        net = mx.sym.Activation(net, act_type="tanh", name=f"act{i}")
    net = mx.sym.LinearRegressionOutput(net, name="out")
    reqs = {n: "null" if n in ("data", "out_label") else "write" for n in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), grad_req=reqs, data=(batch, width))
    gen = torch.Generator().manual_seed(0)
    for arr in exe.arg_arrays:
        arr._t.copy_(torch.randn(arr.shape, generator=gen) * 0.3)
    model = torch.nn.Sequential(*[m for i in range(layers) for m in
                                  (torch.nn.Linear(width, width), torch.nn.Tanh())])
    with torch.no_grad():
        for i in range(layers):
            model[2 * i].weight.copy_(exe.arg_dict[f"fc{i}_weight"]._t)
            model[2 * i].bias.copy_(exe.arg_dict[f"fc{i}_bias"]._t)
    return exe, model


def median_time(fn, steps: int) -> float:
    for _ in range(50):
        fn()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=20)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    exe, model = build(args.layers, 8, 4)
    x = exe.arg_dict["data"]._t.clone()
    y = exe.arg_dict["out_label"]._t.clone()

    def sg_step():
        exe.forward(is_train=True)
        exe.backward()

    def pt_step():
        for p in model.parameters():
            p.grad = None
        (0.5 * ((model(x) - y) ** 2).sum()).backward()

    sg, pt = median_time(sg_step, args.steps), median_time(pt_step, args.steps)
    launches = len(exe._plan.forward_train) + len(exe._plan.backward)
    result = {"benchmark": f"overhead_mlp_{args.layers}x8_b4_fwd_bwd", "device": "cpu, 1 thread",
              "date": datetime.date.today().isoformat(), "commit": commit(),
              "symgraph_us": round(sg * 1e6, 1), "torch_eager_us": round(pt * 1e6, 1),
              "symgraph_launches": launches,
              "symgraph_us_per_launch": round(sg * 1e6 / launches, 2),
              "time_ratio_vs_torch_eager": round(sg / pt, 3)}
    print(f"symgraph     {sg * 1e6:9.1f} us/step  ({launches} launches, "
          f"{sg * 1e6 / launches:.2f} us each)")
    print(f"torch eager  {pt * 1e6:9.1f} us/step")
    print(f"ratio        {sg / pt:9.3f}x")
    if args.json:
        from symgraph.symbol.json_io import atomic_write
        atomic_write(args.json, (json.dumps(result, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
