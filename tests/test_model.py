"""mx.model: checkpoints in MXNet's layout, and the classic training loop."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from symgraph.model import load_checkpoint, save_checkpoint

NETS = Path(__file__).parent / "fixtures" / "mxnet" / "nets"


@pytest.mark.parametrize("name", ["mlp", "lenet", "resblock"])
def test_mxnet_checkpoint_loads_and_predicts_like_mxnet(name):
    sym, args, aux = load_checkpoint(str(NETS / name / "checkpoint"), 0)
    arrays = np.load(NETS / name / "arrays.npz")
    meta = json.loads((NETS / name / "meta.json").read_text())
    exe = sym.simple_bind(mx.cpu(), grad_req="null",
                          **{k: tuple(v) for k, v in meta["input_shapes"].items()})
    exe.copy_params_from(args, aux, allow_extra_params=True)
    exe.arg_dict["data"][:] = arrays["arg:data"]
    np.testing.assert_allclose(exe.forward(is_train=False)[0].asnumpy(), arrays["out_eval:0"],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "lenet"])
def test_our_checkpoint_is_byte_identical_to_mxnets(name, tmp_path):
    sym, args, aux = load_checkpoint(str(NETS / name / "checkpoint"), 0)
    save_checkpoint(str(tmp_path / "ours"), 0, sym, args, aux)
    for suffix in ("-symbol.json", "-0000.params"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == \
            (NETS / name / f"checkpoint{suffix}").read_bytes(), suffix


def test_corrupt_files_raise_clear_errors(tmp_path):
    net = mx.sym.Variable("x") * 2
    save_checkpoint(str(tmp_path / "m"), 1, net, {"w": mx.nd.ones((3,))}, {})
    params = tmp_path / "m-0001.params"
    params.write_bytes(params.read_bytes()[:-5])
    with pytest.raises(mx.MXNetError, match="m-0001.params"):
        load_checkpoint(str(tmp_path / "m"), 1)
    (tmp_path / "m-symbol.json").write_text("{not json")
    with pytest.raises(mx.MXNetError, match="malformed"):
        load_checkpoint(str(tmp_path / "m"), 1)
    mx.nd.save(str(tmp_path / "bad-0000.params"), {"weird:w": mx.nd.ones((1,))})
    with pytest.raises(mx.MXNetError, match="not arg:/aux:"):
        mx.model.load_params(str(tmp_path / "bad"), 0)
