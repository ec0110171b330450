"""MXNet 1.9.1's own example scripts, unchanged, on synthetic data under symgraph: the CI subset
of tools/mxnet_examples (the full table, with MXNet's runs beside symgraph's, is
docs/mxnet_examples.md). The accuracy each must reach is MXNet 1.9.1's on the same files and
arguments, recorded in tools/mxnet_examples/expected.json by ``run.py --write-expected``."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "mxnet_examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"mxnet_examples_{name}", TOOL / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = _load("run")
EXPECTED = json.loads((TOOL / "expected.json").read_text())["mxnet"]


def _have_scripts() -> bool:
    probe = subprocess.run(["git", "-C", str(runner.MXNET_GIT), "cat-file", "-e",
                            runner.MXNET_COMMIT], capture_output=True)
    return probe.returncode == 0


needs_scripts = pytest.mark.skipif(not _have_scripts(),
                                   reason=f"MXNet's git tree is not at {runner.MXNET_GIT}")


@needs_scripts
@pytest.mark.parametrize("name", runner.CI_SUBSET)
def test_example_reaches_mxnets_result(name, tmp_path):
    ex = runner.EXAMPLES[name]
    script_dir = runner.prepare(ex, runner.MXNET_GIT, tmp_path / name)
    run = runner.run_script(ex, sys.executable, "symgraph", script_dir)
    assert run["rc"] == 0, run["tail"]
    status, why = runner.verdict(ex, run, {"rc": 0, "metric": EXPECTED[name], "tail": ""})
    assert status == "pass", f"{name}: {why} (symgraph {run['metric']}, MXNet {EXPECTED[name]})"


def test_synthetic_mnist_is_learnable_but_not_trivial(tmp_path):
    # nearest class mean (plain numpy) must learn it; the 4 % random labels cap any model
    runner.synth.write_mnist(tmp_path, n_train=2000, n_test=500, gz=True)
    read = runner.synth.read_idx
    x = read(tmp_path / "train-images-idx3-ubyte").reshape(2000, -1) / 255.0
    y = read(tmp_path / "train-labels-idx1-ubyte")
    xt = read(tmp_path / "t10k-images-idx3-ubyte").reshape(500, -1) / 255.0
    yt = read(tmp_path / "t10k-labels-idx1-ubyte")
    means = np.stack([x[y == c].mean(0) for c in range(10)])
    acc = ((xt @ means.T - 0.5 * (means ** 2).sum(1)).argmax(1) == yt).mean()
    assert 0.85 < acc < 0.995
    import gzip
    raw = gzip.open(tmp_path / "t10k-labels-idx1-ubyte.gz").read()
    assert raw[:8] == bytes([0, 0, 8, 1, 0, 0, 1, 244]) and raw[8:] == yt.tobytes()


def test_generated_rec_reads_back_with_mx_recordio(tmp_path):
    import symgraph as mx
    images, labels = runner.synth.color_arrays(6, seed=0)
    runner.synth.write_rec(tmp_path / "s.rec", images, labels, quality=100)
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "s.idx"), str(tmp_path / "s.rec"), "r")
    header, img = mx.recordio.unpack_img(rec.read_idx(5))  # BGR, as OpenCV decodes
    assert header.label == labels[5] and header.id == 5
    # JPEG keeps the bars and colours, not the per-pixel noise: compare 8x8 block means
    blocks = [a.reshape(4, 8, 4, 8, 3).astype(float).mean((1, 3)) for a in (img[:, :, ::-1],
                                                                          images[5])]
    assert np.abs(blocks[0] - blocks[1]).max() < 8
