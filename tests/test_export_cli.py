"""``python -m symgraph.export`` on a checkpoint written by MXNet 1.9.1
(``tests/fixtures/export``, from its ``generate.py``), in a process where MXNet cannot be
imported: the ONNX model and the PyTorch program give MXNet's recorded outputs."""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

FIX = pathlib.Path(__file__).parent / "fixtures" / "export"
# runs the command with ``import mxnet`` failing, so nothing of MXNet can take part
RUN = ("import sys, runpy; sys.modules['mxnet'] = None; sys.argv = ['symgraph.export'] + "
       "sys.argv[1:]; runpy.run_module('symgraph.export', run_name='__main__')")


def _convert(tmp_path, *args) -> subprocess.CompletedProcess:
    for f in FIX.glob("convnet*"):
        shutil.copy(f, tmp_path)
    return subprocess.run([sys.executable, "-c", RUN, str(tmp_path / "convnet"), "3", *args],
                          capture_output=True, text=True, timeout=300)


def test_onnx_from_an_mxnet_checkpoint(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    done = _convert(tmp_path, "--to", "onnx", "--input-shape", "data:2,3,10,10")
    assert done.returncode == 0, done.stderr
    assert "exported onnx" in done.stdout and "Convolution x2" in done.stdout
    want = np.load(FIX / "outputs.npz")
    sess = ort.InferenceSession(str(tmp_path / "convnet.onnx"))
    got = sess.run(None, {"data": want["data"]})[0]
    np.testing.assert_allclose(got, want["softmax"], rtol=1e-4, atol=1e-6)


def test_torch_program_from_an_mxnet_checkpoint(tmp_path):
    out = tmp_path / "model.pt2"
    done = _convert(tmp_path, "--to", "torch", "--input-shape", "data:2,3,10,10",
                    "--dynamic-batch", "--output", str(out))
    assert done.returncode == 0, done.stderr
    want = np.load(FIX / "outputs.npz")
    program = torch.export.load(str(out))  # plain PyTorch: no symgraph code in the file
    got = program.module()(data=torch.tensor(want["data"]))
    np.testing.assert_allclose(got.detach().numpy(), want["softmax"], rtol=1e-4, atol=1e-6)
    assert program.module()(data=torch.zeros(5, 3, 10, 10)).shape == (5, 5)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize(("args", "message"), [
    (["--to", "onnx"], "give --input-shape for the data inputs ['data']"),
    (["--to", "onnx", "--input-shape", "data:2,x"], "cannot read"),
])
def test_bad_command_lines_are_clear_errors(tmp_path, args, message):
    done = _convert(tmp_path, *args)
    assert done.returncode == 1
    assert message in done.stderr


def test_missing_checkpoint_is_named(tmp_path):
    done = subprocess.run([sys.executable, "-m", "symgraph.export", str(tmp_path / "none"), "0",
                           "--to", "onnx"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "none-symbol.json: no such file" in done.stderr
