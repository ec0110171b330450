"""Symbol JSON: MXNet-written files (current and legacy forms) load; ours match MXNet's text."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import symgraph as mx

FIX = Path(__file__).parent / "fixtures" / "mxnet"
JSON = FIX / "json"
EXPECTED = json.loads((JSON / "expected.json").read_text())
# cases where symgraph deliberately differs from MXNet 1.9.1 (docs/compat.md)
DIFFERS = {"self_loop.json": "a node reading its own output is a cycle: rejected"}


@pytest.mark.parametrize("net", ["mlp", "lenet", "resblock", "mlp_head"])
def test_mxnet_saved_json_round_trips_byte_for_byte(net):
    text = (FIX / "nets" / net / "symbol.json").read_text()
    assert mx.sym.load_json(text).tojson() == text


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_file_loads_like_mxnet(name):
    rec = EXPECTED[name]
    if name in DIFFERS:
        with pytest.raises(mx.MXNetError):
            mx.sym.load(str(JSON / name))
        return
    if not rec["ok"]:
        with pytest.raises(mx.MXNetError):
            mx.sym.load(str(JSON / name))
        return
    sym = mx.sym.load(str(JSON / name))
    assert sym.list_arguments() == rec["list_arguments"]
    assert sym.list_outputs() == rec["list_outputs"]
    assert sym.list_auxiliary_states() == rec["list_auxiliary_states"]
    assert sym.attr_dict() == rec["attr_dict"]
    assert json.loads(sym.tojson()) == rec["upgraded_tojson"]


def test_save_is_atomic_and_loadable(tmp_path):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    path = tmp_path / "net-symbol.json"
    net.save(str(path))
    assert mx.sym.load(str(path)).tojson() == net.tojson()
    assert [p.name for p in tmp_path.iterdir()] == ["net-symbol.json"]


@pytest.mark.parametrize("text,match", [
    ("{", "malformed"),
    ('{"nodes": [], "heads": []}', "non-empty"),
    ('{"nodes": [{"op": "null", "name": "a", "inputs": []}], "heads": [[3, 0, 0]]}', "heads"),
    ('{"nodes": [{"op": "relu", "name": "r", "inputs": [[0, 0, 0]]}], "heads": [[0, 0, 0]]}',
     "cycle"),
    ('{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "Activation", "name": "r",'
     ' "attrs": {"act_type": "bogus"}, "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]}',
     "bogus"),
    ('{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "relu", "name": "r",'
     ' "inputs": [[0, 2, 0]]}], "heads": [[1, 0, 0]]}', "output 2"),
])
def test_bad_json_raises_typed_errors(text, match):
    with pytest.raises(mx.MXNetError, match=match):
        mx.sym.load_json(text)


def test_an_initializer_object_repr_hint_loads_as_in_mxnet():
    """GluonCV's SSD/FPN exports carry ``__init__`` hints MXNet wrote as an Initializer
    object's repr: MXNet loads them, so does symgraph; other malformed hints still fail."""
    doc = json.loads(mx.sym.var("w", init=mx.init.Xavier()).tojson())
    doc["nodes"][0]["attrs"]["__init__"] = "<mxnet.initializer.Xavier object at 0x7f3a2c1b5d30>"
    sym = mx.sym.load_json(json.dumps(doc))
    assert sym.attr("__init__").startswith("<mxnet.initializer.Xavier object")
    doc["nodes"][0]["attrs"]["__init__"] = "<mxnet.initializer.Xavier"
    with pytest.raises(mx.base.MXNetError, match="__init__"):
        mx.sym.load_json(json.dumps(doc))

