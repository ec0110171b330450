"""ImageRecordIter throughput (images/s): symgraph vs MXNet 1.9.1 on the same ``.rec`` file.

The file: 2000 JPEGs (quality 90) of 256x256 smooth random images, packed with
``mx.recordio.pack``. Both sides read it with ``data_shape=(3, 224, 224)``, ``batch_size=64``,
``rand_crop``, ``rand_mirror``, ``preprocess_threads=2`` (MXNet's own defaults otherwise),
one warm-up epoch, then one timed epoch per round, ``--rounds`` rounds interleaved, best
of each side. MXNet runs in its own virtualenv (``--mxnet-python``, default
``/work/mxvenv/bin/python`` when it exists) as a subprocess, with both its parsers
(``ctx='gpu'``, its default, and ``ctx='cpu'``); the ratio is against the faster.

    python -m symgraph.bench image_record [--images 2000] [--rounds 3]
        [--json benchmarks/results/image_record_cpu.json] [--mxnet-python PATH]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MXNET_PYTHON = "/work/mxvenv/bin/python"
SETTINGS = dict(data_shape=(3, 224, 224), batch_size=64, rand_crop=True, rand_mirror=True,
                preprocess_threads=2)


def make_rec(path: str, images: int, size: int = 256) -> None:
    """``images`` JPEG records of ``size`` x ``size`` (written with symgraph's recordio)."""
    import cv2

    from symgraph import recordio
    rng = np.random.RandomState(0)
    writer = recordio.MXRecordIO(path, "w")
    for i in range(images):
        small = rng.randint(0, 256, (8, 8, 3)).astype(np.uint8)
        img = cv2.resize(small, (size, size), interpolation=cv2.INTER_CUBIC)
        img = np.clip(img + rng.randint(-12, 13, img.shape), 0, 255).astype(np.uint8)
        writer.write(recordio.pack_img((0, float(i % 10), i, 0), img, quality=90))
    writer.close()


def epoch_rate(mx, path: str, rounds: int, ctx: str = "gpu") -> float:
    """Best images/s over ``rounds`` epochs of ImageRecordIter (after a warm-up epoch).
    ``ctx`` picks MXNet's parser: 'gpu' (its default: a prefetching thread and
    ``preprocess_threads`` decoders, capped at half the cores) or 'cpu' (OpenMP threads)."""
    it = mx.io.ImageRecordIter(path_imgrec=path, ctx=ctx, **SETTINGS)
    best = 0.0
    for r in range(rounds + 1):
        it.reset()
        t0, count = time.perf_counter(), 0
        for batch in it:
            batch.data[0].wait_to_read()
            count += batch.data[0].shape[0] - batch.pad
        if r:  # the first pass is a warm-up
            best = max(best, count / (time.perf_counter() - t0))
    return best


def mxnet_rate(python: str | None, path: str, rounds: int, ctx: str) -> float | None:
    """The same loop under MXNet 1.9.1 in its own virtualenv (None if absent or failing)."""
    if not python or not os.path.exists(python):
        return None
    code = (f"import sys, logging, mxnet as mx; logging.disable(logging.WARNING); "
            f"sys.path.insert(0, {HERE!r}); import bench_image_record as b; "
            f"print(b.epoch_rate(mx, {path!r}, {rounds}, {ctx!r}))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=900,
                         check=False)
    if out.returncode != 0:
        print(out.stderr[-2000:], file=sys.stderr)
        return None
    return float(out.stdout.strip().splitlines()[-1])


def measure(mx, path: str, args) -> tuple[float, dict]:
    """Ours and MXNet's (both parsers) in interleaved rounds, best of each."""
    ours, theirs = 0.0, {"gpu": None, "cpu": None}
    for _ in range(args.rounds):  # interleaved, so machine noise hits both sides alike
        for ctx in theirs:
            rate = mxnet_rate(args.mxnet_python, path, 1, ctx)
            if rate is not None:
                theirs[ctx] = max(theirs[ctx] or 0.0, rate)
        ours = max(ours, epoch_rate(mx, path, 1))
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None)
    parser.add_argument("--mxnet-python", default=MXNET_PYTHON)
    args = parser.parse_args()
    sys.path.insert(0, ROOT)
    import symgraph as mx
    from benchmarks.bench_mlp import commit
    from symgraph.fileio import atomic_write
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.rec")
        make_rec(path, args.images)
        size_mb = os.path.getsize(path) / 2 ** 20
        ours, parsers = measure(mx, path, args)
    theirs = max((v for v in parsers.values() if v is not None), default=None)
    ratio = None if theirs is None else ours / theirs
    print(f"ImageRecordIter {args.images} JPEGs 256x256 ({size_mb:.1f} MB) -> 3x224x224, "
          f"batch 64, rand_crop+rand_mirror, 2 threads: symgraph {ours:.0f} img/s, MXNet "
          f"{'n/a' if theirs is None else f'{theirs:.0f} img/s'}, ratio "
          f"{'n/a' if ratio is None else f'{ratio:.2f}x'}")
    result = {"device": f"cpu ({os.cpu_count()} cores)", "date": datetime.date.today().isoformat(),
              "commit": commit(), "images": args.images, "rec_mb": round(size_mb, 1),
              "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in SETTINGS.items()},
              "symgraph_images_per_s": round(ours, 1),
              "mxnet_images_per_s": None if theirs is None else round(theirs, 1),
              "mxnet_by_parser": {k: None if v is None else round(v, 1)
                                  for k, v in parsers.items()},
              "ratio": None if ratio is None else round(ratio, 3), "target": ">= 1.0"}
    if args.json:
        atomic_write(args.json, (json.dumps(result, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
