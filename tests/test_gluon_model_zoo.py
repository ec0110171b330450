"""``gluon.model_zoo`` against MXNet 1.9.1 (``tests/fixtures/model_zoo``, recorded by its
``generate.py`` from the scenarios in ``scenarios.py``): every model's class, prefix,
parameter names, shapes and grad_req, and repr; outputs of five models on seeded
parameters (one also in training mode, with gradients); the local pretrained-file store.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import UnsupportedError
from symgraph.gluon.model_zoo import model_store, vision
from tests import fixture_scripts

scenarios = fixture_scripts.load("model_zoo/scenarios.py")
WANT = json.loads((pathlib.Path(__file__).parent / "fixtures" / "model_zoo" /
                   "model_zoo.json").read_text())
NAMES = sorted(WANT["structure"])


def test_get_model_knows_mxnets_models():
    assert scenarios.model_names(mx) == NAMES
    assert len(NAMES) == 34


@pytest.mark.parametrize("name", NAMES)
def test_structure_matches_mxnet(name):
    got = scenarios.structure(mx, name, forward=False)
    want = WANT["structure"][name]
    if "params" in want:  # spelled out: the first differing line shows in the diff
        assert got["params"] == want["params"]
    if "repr" in want:
        assert got["repr"] == want["repr"]
    for key in ("class", "prefix", "input", "num_params", "params_digest", "repr_digest"):
        assert got[key] == want[key], key


@pytest.mark.parametrize("name", sorted(scenarios.NUMERIC))
def test_outputs_match_mxnet(name):
    got = scenarios.numeric(mx, name)
    want = WANT["numeric"][name]
    np.testing.assert_allclose(got["infer"], want["infer"], rtol=1e-4, atol=1e-4)
    if name != scenarios.TRAIN:
        return
    np.testing.assert_allclose(got["train"], want["train"], rtol=1e-3, atol=1e-3)
    assert sorted(got["running_mean_sums"]) == sorted(want["running_mean_sums"])
    for key, value in want["running_mean_sums"].items():
        assert got["running_mean_sums"][key] == pytest.approx(value, rel=1e-3, abs=1e-3), key
    for key, value in want["grad_rows"].items():
        np.testing.assert_allclose(got["grad_rows"][key], value, rtol=1e-3, atol=1e-3)


def _write_pretrained(name: str, root, params: dict) -> str:
    """``params`` saved as MXNet's model store names the file (prefix-stripped keys)."""
    path = os.path.join(root, f"{name}-{model_store.short_hash(name)}.params")
    mx.nd.save(path, params)
    return path


@pytest.mark.parametrize("structural", [False, True])
def test_pretrained_loads_a_local_file(tmp_path, structural):
    name = "mobilenet0.25"
    seeded, x = scenarios.seeded_net(mx, name)
    if structural:  # Block.save_parameters' names ("features.0.weight")
        seeded.save_parameters(os.path.join(tmp_path, f"{name}-9f83e440.params"))
    else:  # ParameterDict.save with the prefix stripped ("conv0_weight")
        _write_pretrained(name, tmp_path, {scenarios.stripped(seeded, k): p.data()
                                           for k, p in seeded.collect_params().items()})
    with pytest.warns(UserWarning, match="SHA-1 mismatch"):
        net = vision.get_model(name, classes=10, pretrained=True, root=str(tmp_path))
    np.testing.assert_allclose(net(x).asnumpy(), WANT["numeric"][name]["infer"],
                               rtol=1e-4, atol=1e-4)


# factory -> MXNet's pretrained file name
PRETRAINED_NAMES = [
    (lambda **kw: vision.get_resnet(2, 50, **kw), "resnet50_v2"),
    (vision.vgg13_bn, "vgg13_bn"), (vision.vgg16, "vgg16"), (vision.alexnet, "alexnet"),
    (vision.densenet169, "densenet169"), (vision.squeezenet1_0, "squeezenet1.0"),
    (vision.inception_v3, "inceptionv3"), (vision.mobilenet0_5, "mobilenet0.5"),
    (vision.mobilenet1_0, "mobilenet1.0"), (vision.mobilenet0_75, "mobilenet0.75"),
    (vision.mobilenet_v2_0_5, "mobilenetv2_0.5"), (vision.mobilenet_v2_1_0, "mobilenetv2_1.0"),
]


@pytest.mark.parametrize("factory,name", PRETRAINED_NAMES)
def test_pretrained_without_the_file_says_what_to_fetch(tmp_path, factory, name):
    file_name = f"{name}-{model_store.short_hash(name)}"
    with pytest.raises(UnsupportedError, match=f"gluon/models/{file_name}.zip") as err:
        factory(pretrained=True, root=str(tmp_path))
    assert f"{file_name}.params" in str(err.value) and "never uses the network" in str(err.value)


def test_model_store_names_and_purge(tmp_path):
    assert model_store.short_hash("mobilenetv2_0.25") == "ae8f9392"
    with pytest.raises(ValueError, match="Pretrained model for resnet9_v1 is not available"):
        model_store.get_model_file("resnet9_v1", root=str(tmp_path))
    path = _write_pretrained("alexnet", tmp_path, {"w": mx.nd.ones((1,))})
    (tmp_path / "notes.txt").write_text("kept")
    with pytest.warns(UserWarning, match="differs from MXNet's published alexnet weights"):
        assert model_store.get_model_file("alexnet", root=str(tmp_path)) == path
    model_store.purge(str(tmp_path))
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_get_model_errors_and_arguments():
    with pytest.raises(ValueError, match="Model resnet9_v1 is not supported.*\n\talexnet"):
        vision.get_model("ResNet9_v1")
    assert isinstance(vision.get_model("SqueezeNet1.1"), vision.SqueezeNet)
    with pytest.raises(ValueError, match="Invalid number of layers: 20"):
        vision.get_resnet(1, 20)
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version 1.2"):
        vision.SqueezeNet("1.2")
    thumb = vision.resnet18_v1(thumbnail=True, classes=10)
    assert [k[len(thumb.prefix):] for k in thumb.collect_params().keys()][:2] == \
        ["conv0_weight", "stage1_conv0_weight"]  # the stem is one 3x3 convolution


def test_mxnet_import_forms_resolve_to_the_real_package(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import mxnet as mx\n"
        "import mxnet.gluon.model_zoo.vision as a\n"
        "from mxnet.gluon.model_zoo import vision as b\n"
        "from mxnet.gluon.contrib.nn import HybridConcurrent\n"
        "assert a is b is mx.gluon.model_zoo.vision\n"
        "assert HybridConcurrent is mx.gluon.contrib.nn.HybridConcurrent\n"
        "print(type(mx.gluon.model_zoo.vision.resnet18_v1()).__name__)\n")
    out = subprocess.run([sys.executable, "-m", "symgraph", "run", str(script)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ResNetV1"
