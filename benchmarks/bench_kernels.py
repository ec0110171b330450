"""Kernel benchmarks: every entry of the kernel table against torch eager and torch.compile.

For each kernel family and benchmark size it prints achieved GB/s (bandwidth-bound kernels)
or TFLOP/s (GEMMs) for the Triton kernel, the torch reference in eager mode and the same
reference under ``torch.compile``, next to the device's measured ceilings (a large
device-to-device copy and a large fp16 matmul). Results go to a JSON file with device, date
and commit, and to a matplotlib plot beside it.

    python -m symgraph.bench kernels [--only NAME ...] [--families FAMILY ...]
        [--json benchmarks/results/kernels_gpu.json]

On a CPU (no CUDA device) the suite measures what a CPU can: each entry's torch reference
on the table's test shapes (achieved GB/s or GFLOP/s against the CPU's measured copy and
matmul ceilings), and with ``--triton`` the Triton kernel under the interpreter on the same
tiny shapes: its result checked against the reference, and its cost relative to the
reference (the interpreter runs every program in numpy: a correctness run, not a speed).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time

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


def check_entry(spec, args, kwargs) -> dict:
    """The Triton result at benchmark size against the reference: max abs error and pass."""
    clone = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    # the kernels compute fp32 products in IEEE precision: so must the reference here
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        want = spec.ref(*clone, **kwargs)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    got = spec.fn(*args, **kwargs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    dtype = next((w.dtype for w in want if w.dtype.is_floating_point), torch.float32)
    rtol, atol = spec.tol.get(dtype, (1e-5, 1e-5))
    worst, ok = 0.0, len(got) == len(want)
    for g, w in zip(got, want):
        g, w = g.double(), w.double()
        err = torch.where(g == w, 0.0, (g - w).abs())  # equal infinities (prod) agree
        worst = max(worst, float(err.max()) if err.numel() else 0.0)
        # large sizes accumulate more rounding than the small test shapes: 4x the tolerance
        ok = ok and g.shape == w.shape and bool(torch.all(err <= 4 * (atol + rtol * w.abs())))
    return {"ok": ok, "max_abs_err": worst}


def bench_entry(spec, shape, dtype, peers) -> dict:
    args, kwargs = spec.make(dtype, torch.device("cuda"), shape)
    row = {"kernel": spec.name, "family": spec.family, "shape": list(shape),
           "dtype": str(dtype).replace("torch.", "")}
    try:
        row["check"] = check_entry(spec, args, kwargs)
    except Exception as err:  # a failing kernel is reported, not fatal
        row["check"] = {"ok": False, "error": f"{type(err).__name__}: {err}"[:300]}
    fns = {"triton": spec.fn, "eager": spec.ref}
    if "compile" in peers:
        fns["compile"] = torch.compile(spec.ref)
    for label in peers:
        try:
            ms = _bench(lambda fn=fns[label]: fn(*args, **kwargs))
        except Exception as err:  # a failing peer is reported, not fatal
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


# ---------------------------------------------------------------- CPU mode

def _bench_cpu(fn, reps: int = 5) -> float:
    """Median milliseconds of ``fn`` over ``reps`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def ceilings_cpu() -> dict:
    """The CPU's measured copy bandwidth (GB/s) and fp32 matmul throughput (GFLOP/s)."""
    src = torch.empty(1 << 24, dtype=torch.float32)
    dst = torch.empty_like(src)
    ms = _bench_cpu(lambda: dst.copy_(src))
    a = torch.randn(1024, 1024)
    mm = _bench_cpu(lambda: a @ a, 3)
    return {"copy_GBps": 2 * src.numel() * 4 / ms / 1e6,
            "matmul_fp32_GFLOPs": 2 * 1024 ** 3 / mm / 1e6}


def bench_entry_cpu(spec, dtype, triton: bool) -> dict:
    """An entry on the CPU: its reference timed on the largest test shape; with ``triton``
    the interpreted kernel checked against it and timed once."""
    shape = spec.shapes[-1]
    args, kwargs = spec.make(dtype, torch.device("cpu"), shape)
    row = {"kernel": spec.name, "family": spec.family, "shape": list(shape),
           "dtype": str(dtype).replace("torch.", "")}
    try:
        ms = _bench_cpu(lambda: spec.ref(*args, **kwargs))
        unit, rate = _rate(spec, args, ms)
        row["eager"] = {"ms": round(ms, 5), unit: round(rate, 4)}
    except Exception as err:  # a failing reference is reported, not fatal
        row["eager"] = {"error": f"{type(err).__name__}: {err}"[:200]}
    if triton:
        try:
            row["check"] = check_entry(spec, args, kwargs)
            ms = _bench_cpu(lambda: spec.fn(*args, **kwargs), 1)
            row["triton_interpreted"] = {"ms": round(ms, 3)}
            if "ms" in row["eager"]:
                row["interpreter_cost_vs_eager"] = round(ms / max(row["eager"]["ms"], 1e-6), 1)
        except Exception as err:  # a failing kernel is reported, not fatal
            row["check"] = {"ok": False, "error": f"{type(err).__name__}: {err}"[:300]}
    return row


def plot_cpu(result: dict, path: str) -> None:
    """Each reference's achieved rate as a share of the CPU's measured ceiling (copy
    bandwidth for bandwidth-bound entries, matmul for GEMMs), per kernel family."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print('matplotlib is not installed (pip install -e ".[bench]"): no plot written')
        return
    caps = result["ceilings"]
    points = []
    for r in result["rows"]:
        eager = r.get("eager", {})
        if "GB/s" in eager:
            points.append((r, eager["GB/s"] / caps["copy_GBps"], "bandwidth"))
        elif "TFLOP/s" in eager:
            points.append((r, eager["TFLOP/s"] * 1e3 / caps["matmul_fp32_GFLOPs"], "flops"))
    if not points:
        return
    fig, ax = plt.subplots(figsize=(max(8, 0.18 * len(points)), 5))
    for kind, color in (("bandwidth", "tab:blue"), ("flops", "tab:orange")):
        xs = [i for i, p in enumerate(points) if p[2] == kind]
        ax.bar(xs, [points[i][1] for i in xs], color=color,
               label=f"{kind}: share of {caps['copy_GBps']:.0f} GB/s" if kind == "bandwidth"
               else f"{kind}: share of {caps['matmul_fp32_GFLOPs']:.0f} GFLOP/s")
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_yscale("log")
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels([p[0]["kernel"] for p in points], rotation=90, fontsize=5)
    ax.set_ylabel("achieved / measured ceiling (torch reference, test shapes)")
    ax.set_title(f"kernel references on {result['device']} — {result['date']}, "
                 f"{str(result['commit'])[:10]}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main_cpu(args) -> int:
    """The CPU mode (see the module's notes)."""
    import platform

    from benchmarks.bench_mlp import commit
    from symgraph.kernels.table import all_kernels
    start = time.perf_counter()
    caps = ceilings_cpu()
    print(f"CPU {platform.processor() or platform.machine()}: copy {caps['copy_GBps']:.1f} "
          f"GB/s, fp32 matmul {caps['matmul_fp32_GFLOPs']:.0f} GFLOP/s (no CUDA device: torch "
          f"references{' and the Triton interpreter' if args.triton else ''}, test shapes)")
    result = {"device": f"cpu ({os.cpu_count()} cores)",
              "date": datetime.date.today().isoformat(), "commit": commit(),
              "torch": torch.__version__, "mode": "cpu", "ceilings": caps, "rows": []}
    for name, spec in all_kernels().items():
        if (args.only and name not in args.only) or \
                (args.families and spec.family not in args.families):
            continue
        for dtype in spec.dtypes[:1] if not args.dtypes else spec.dtypes:
            if args.dtypes and str(dtype).replace("torch.", "") not in args.dtypes:
                continue
            if args.budget_s and time.perf_counter() - start > args.budget_s:
                result["stopped"] = f"time budget {args.budget_s} s spent"
                break
            row = bench_entry_cpu(spec, dtype, args.triton)
            result["rows"].append(row)
            print(json.dumps(row), flush=True)
    _write(args.json, result)
    plot_cpu(result, args.json.rsplit(".", 1)[0] + ".png")
    bad = [r["kernel"] for r in result["rows"] if not r.get("check", {"ok": True})["ok"]]
    if bad:
        print(f"{len(bad)} interpreted kernels disagree with their reference: {bad}")
    return 0


def _write(path: str, result: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="kernel names to run")
    parser.add_argument("--families", nargs="*", default=None, help="kernel families to run")
    parser.add_argument("--dtypes", nargs="*", default=None, help="e.g. float16 float32")
    parser.add_argument("--peers", default="triton,eager,compile",
                        help="comma-separated subset of triton,eager,compile")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="stop starting new entries after this many seconds")
    parser.add_argument("--json", default="benchmarks/results/kernels_gpu.json")
    parser.add_argument("--triton", action="store_true",
                        help="on a CPU: also run the Triton kernels under the interpreter "
                             "(correctness and relative cost, tiny shapes)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        return main_cpu(args)
    from benchmarks.bench_mlp import commit
    from symgraph.kernels.table import all_kernels
    peers = args.peers.split(",")
    start = time.perf_counter()
    caps = ceilings()
    print(f"device {torch.cuda.get_device_name()}: copy {caps['copy_GBps']:.0f} GB/s, "
          f"fp16 matmul {caps['matmul_fp16_TFLOPs']:.0f} TFLOP/s")
    result = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
              "commit": commit(), "torch": torch.__version__,
              "triton": __import__("triton").__version__, "ceilings": caps, "rows": []}
    for name, spec in all_kernels().items():
        if (args.only and name not in args.only) or \
                (args.families and spec.family not in args.families):
            continue
        for shape in spec.bench_shapes:
            for dtype in spec.dtypes:
                if args.dtypes and str(dtype).replace("torch.", "") not in args.dtypes:
                    continue
                if args.budget_s and time.perf_counter() - start > args.budget_s:
                    result["stopped"] = f"time budget {args.budget_s} s spent"
                    break
                row = bench_entry(spec, shape, dtype, peers)
                result["rows"].append(row)
                _write(args.json, result)
                print(json.dumps(row), flush=True)
    _write(args.json, result)
    plot(result["rows"], args.json.rsplit(".", 1)[0] + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
