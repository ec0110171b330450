"""``mx.gluon.Parameter``/``Constant``/``ParameterDict`` against MXNet 1.9.1 golden records.

The cases live in ``tests/fixtures/gluon/generate_parameter.py``; the generator ran them with
MXNet 1.9.1 and stored the records (``parameter.json``/``parameter.npz``) and two ``.params``
files. Here every case runs again with symgraph and must give the same records: reprs,
error types and messages, warnings, shapes, dtypes and deterministic values (random
initializers are only checked for range and dtype).
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import symgraph as mx
from tests import fixture_scripts

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "gluon")




GEN = fixture_scripts.load("gluon/generate_parameter.py")
with open(os.path.join(FIXTURES, "parameter.json")) as _f:
    EXPECTED = json.load(_f)
with np.load(os.path.join(FIXTURES, "parameter.npz"), allow_pickle=False) as _npz:
    ARRAYS = {k: _npz[k] for k in _npz.files}


def check_case(name: str) -> None:
    """Run case ``name`` with symgraph and compare every record with MXNet's."""
    plain, arrays = GEN.split_records(GEN.run_case(mx, name))
    plain = json.loads(json.dumps(plain))  # tuples -> lists, as stored
    expected = EXPECTED[name]
    assert sorted(plain) == sorted(expected), f"case {name}: record keys differ"
    for key, want in expected.items():
        assert plain[key] == want, f"case {name}, record {key!r}"
    prefix = name + "."
    want_arrays = {k[len(prefix):]: v for k, v in ARRAYS.items() if k.startswith(prefix)}
    assert sorted(arrays) == sorted(want_arrays), f"case {name}: array records differ"
    for key, want in want_arrays.items():
        got = np.asarray(arrays[key])
        assert got.dtype == want.dtype, f"case {name}, array {key!r}: {got.dtype} vs {want.dtype}"
        assert got.shape == want.shape, f"case {name}, array {key!r}: {got.shape} vs {want.shape}"
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=f"{name}.{key}")


PARAMETER_CASES = [n for n in GEN.CASES if not n.startswith("utils_")]


def test_every_case_has_records():
    assert sorted(EXPECTED) == sorted(GEN.CASES)
    for name in GEN.CASES:
        assert EXPECTED[name] or any(k.startswith(name + ".") for k in ARRAYS), name


@pytest.mark.parametrize("name", PARAMETER_CASES)
def test_matches_mxnet(name):
    check_case(name)


# ----------------------------------------------------------------- symgraph specifics
def test_saved_file_is_byte_identical_to_mxnet(tmp_path):
    """Ours loads in MXNet: the same ParameterDict saves to the bytes MXNet wrote."""
    pd = GEN._saved_dict(mx)
    pd.save(str(tmp_path / "full.params"))
    pd.save(str(tmp_path / "stripped.params"), strip_prefix="net_")
    assert (tmp_path / "full.params").read_bytes() == open(GEN.FULL_PARAMS, "rb").read()
    assert (tmp_path / "stripped.params").read_bytes() == \
        open(GEN.STRIPPED_PARAMS, "rb").read()


def test_round_trip_keeps_values_and_dtypes(tmp_path):
    pd = GEN._saved_dict(mx)
    path = str(tmp_path / "rt.params")
    pd.save(path)
    back = mx.gluon.ParameterDict("net_")
    for name in ("w", "b", "i"):
        back.get(name, dtype=pd["net_" + name].dtype)
    back.load(path, ctx=[mx.cpu(0), mx.cpu(1)])
    for name in ("w", "b", "i"):
        want = ARRAYS[f"dict_save.saved_net_{name}"]
        got = back["net_" + name].data(mx.cpu(1)).asnumpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_data_arrays_are_autograd_variables():
    p = mx.gluon.Parameter("w", shape=(2,), init=mx.init.One())
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    for arr, grad, ctx in zip(p.list_data(), p.list_grad(), p.list_ctx()):
        assert isinstance(arr, mx.nd.NDArray)
        assert arr._fresh_grad is False
        assert arr.grad is grad and arr._ag_req == "write"
        assert arr.context == ctx and grad.context == ctx
    p.list_data()[0]._fresh_grad = True
    p.grad_req = "add"
    assert [a._ag_req for a in p.list_data()] == ["add", "add"]
    p.cast("float16")
    assert all(a._fresh_grad is False and a.grad is g and a.context == c
               for a, g, c in zip(p.list_data(), p.list_grad(), p.list_ctx()))
    p.grad_req = "null"
    assert all(a._fresh_grad is False and a.grad is None and a.context == c
               for a, c in zip(p.list_data(), p.list_ctx()))


def test_backward_writes_parameter_gradients():
    p = mx.gluon.Parameter("w", shape=(3,), init=mx.init.Constant(2.0))
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    with mx.autograd.record():
        loss = (p.data(mx.cpu(1)) * p.data(mx.cpu(1))).sum()
    loss.backward()
    want = 2 * p.data(mx.cpu(1)).asnumpy()
    np.testing.assert_allclose(p.grad(mx.cpu(1)).asnumpy(), want)
    assert p.data(mx.cpu(1))._fresh_grad and not p.data(mx.cpu(0))._fresh_grad
    np.testing.assert_array_equal(p.grad(mx.cpu(0)).asnumpy(),
                                  np.zeros_like(want))


def test_copies_per_context_are_independent():
    p = mx.gluon.Parameter("w", shape=(3,), init=mx.init.Zero())
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    before, grad_before = p.data(mx.cpu(0)).asnumpy(), p.grad(mx.cpu(1)).asnumpy()
    p.data(mx.cpu(1))[:] = mx.nd.arange(3)
    p.grad(mx.cpu(0))[:] = mx.nd.arange(3)
    np.testing.assert_array_equal(p.data(mx.cpu(1)).asnumpy(), mx.nd.arange(3).asnumpy())
    np.testing.assert_array_equal(p.data(mx.cpu(0)).asnumpy(), before)
    np.testing.assert_array_equal(p.grad(mx.cpu(1)).asnumpy(), grad_before)


def test_constant_initializers_are_distinct():
    a = mx.gluon.Constant("k", [1.0])
    b = mx.gluon.Constant("k", [2.0])
    assert a.init != b.init
    a.initialize()
    b.initialize()
    np.testing.assert_array_equal(a.data().asnumpy(), a.value.asnumpy())
    np.testing.assert_array_equal(b.data().asnumpy(), b.value.asnumpy())


def test_get_constant_compares_list_values():
    # MXNet 1.9.1 fails with AttributeError ('list' has no 'shape'); symgraph compares
    pd = mx.gluon.ParameterDict("net_")
    c = pd.get_constant("c", [[1, 2]])
    assert pd.get_constant("c", [[1, 2]]) is c
    with pytest.raises(AssertionError, match="doesn't match new value"):
        pd.get_constant("c", [[1, 3]])
