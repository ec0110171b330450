"""Kernel benchmarks: every entry of the kernel table against torch eager and torch.compile.

For each kernel family and benchmark size it prints achieved GB/s (bandwidth-bound kernels)
or TFLOP/s (GEMMs) for the Triton kernel, the torch reference in eager mode and the same
reference under ``torch.compile``, next to the device's measured ceilings (a large
device-to-device copy and a large fp16 matmul). Results go to a JSON file with device, date
and commit, and to a matplotlib plot beside it.

    python benchmarks/bench_kernels.py [--only NAME ...]
        [--json benchmarks/results/kernels_gpu.json]

Without a CUDA device it says so and exits with status 0 (nothing is measured).
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys

import torch


def _bench(fn) -> float:
    """Median milliseconds of ``fn`` (triton's do_bench: warm-up, cache flush, CUDA events)."""
    import triton.testing
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def ceilings() -> dict:
    """Measured copy bandwidth (GB/s) and fp16 matmul throughput (TFLOP/s)."""
    n = 1 << 28
    src = torch.empty(n, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    ms = _bench(lambda: dst.copy_(src))
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    mm = _bench(lambda: a @ a)
    return {"copy_GBps": 2 * src.numel() * 4 / ms / 1e6,
            "matmul_fp16_TFLOPs": 2 * 8192 ** 3 / mm / 1e9}


def _rate(spec, args, ms: float) -> tuple[str, float]:
    if spec.flops is not None:
        return "TFLOP/s", spec.flops(*args) / ms / 1e9
    return "GB/s", spec.bytes(*args) / ms / 1e6


def bench_entry(spec, shape, dtype) -> dict:
    args, kwargs = spec.make(dtype, torch.device("cuda"), shape)
    compiled = torch.compile(spec.ref)
    row = {"kernel": spec.name, "family": spec.family, "shape": list(shape),
           "dtype": str(dtype).replace("torch.", "")}
    for label, fn in (("triton", spec.fn), ("eager", spec.ref), ("compile", compiled)):
        try:
            ms = _bench(lambda fn=fn: fn(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 - a failing peer is reported, not fatal
            row[label] = {"error": f"{type(err).__name__}: {err}"[:200]}
            continue
        unit, rate = _rate(spec, args, ms)
        row[label] = {"ms": round(ms, 5), unit: round(rate, 2)}
    return row


def plot(rows: list[dict], path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot written")
        return
    labels = [f"{r['kernel']}\n{'x'.join(map(str, r['shape']))} {r['dtype']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.6), 5))
    for k, peer in enumerate(("triton", "eager", "compile")):
        vals = [next((v for key, v in r.get(peer, {}).items() if key in ("GB/s", "TFLOP/s")),
                     0) for r in rows]
        ax.bar([i + 0.27 * (k - 1) for i in range(len(rows))], vals, width=0.27, label=peer)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set_ylabel("GB/s or TFLOP/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="kernel names to run")
    parser.add_argument("--json", default="benchmarks/results/kernels_gpu.json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("No CUDA device: the kernel benchmarks need a GPU; nothing was measured.")
        return 0
    from benchmarks.bench_mlp import commit
    from kernels.table import all_kernels
    specs = all_kernels()
    caps = ceilings()
    print(f"device {torch.cuda.get_device_name()}: copy {caps['copy_GBps']:.0f} GB/s, "
          f"fp16 matmul {caps['matmul_fp16_TFLOPs']:.0f} TFLOP/s")
    rows = []
    for name, spec in specs.items():
        if args.only and name not in args.only:
            continue
        for shape in spec.bench_shapes:
            for dtype in spec.dtypes:
                row = bench_entry(spec, shape, dtype)
                rows.append(row)
                print(json.dumps(row))
    result = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
              "commit": commit(), "torch": torch.__version__, "ceilings": caps, "rows": rows}
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    plot(rows, args.json.rsplit(".", 1)[0] + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
