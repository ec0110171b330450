"""KVStore against MXNet 1.9.1 fixtures (``tests/fixtures/kvstore/generate.py``) and its errors."""
from __future__ import annotations

import io
import os

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "kvstore", "kvstore.npz")
SGD = {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.5}


@pytest.fixture(scope="module")
def fx():
    return np.load(FIXTURE, allow_pickle=False)


def nd_list(arrays) -> list:
    return [mx.nd.array(a, ctx=mx.cpu(i)) for i, a in enumerate(arrays)]


class StandInUpdater:
    """SGD with momentum as MXNet's ``sgd_mom_update``, states in a pickle-free byte format."""

    def __init__(self, learning_rate, momentum, wd, rescale_grad):
        self.lr, self.mom, self.wd, self.rescale = learning_rate, momentum, wd, rescale_grad
        self.states: dict = {}

    def __call__(self, index, grad, weight):
        g, w = grad.asnumpy(), weight.asnumpy()
        m = self.states.setdefault(index, np.zeros_like(w))
        m[:] = self.mom * m - self.lr * self.wd * w - self.lr * self.rescale * g
        weight[:] = mx.nd.array(w + m)

    def get_states(self, dump_optimizer=False) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, **{str(k): v for k, v in self.states.items()})
        return buf.getvalue()

    def set_states(self, states: bytes) -> None:
        with np.load(io.BytesIO(states), allow_pickle=False) as f:
            self.states = {int(k) if k.isdigit() else k: f[k].copy() for k in f.files}


def _real_updater():
    try:
        from symgraph.optimizer import create, get_updater
        return get_updater(create("sgd", **SGD))
    except (ImportError, AttributeError) as exc:
        pytest.skip(f"symgraph.optimizer.get_updater not available yet: {exc}")


UPDATERS = {"standin": lambda: StandInUpdater(**SGD), "real": _real_updater}


# ---------------------------------------------------------------- aggregation (fixture)
def test_push_sums_devices_pull_broadcasts(fx):
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.array(fx["agg/in/w0"]))
    kv.push(3, nd_list(fx["agg/in/grads"]))
    outs = [mx.nd.zeros((2, 5), ctx=mx.cpu(i)) for i in range(2)]
    kv.pull(3, out=outs)
    for o in outs:  # MXNet's summation order: bit-exact
        np.testing.assert_array_equal(o.asnumpy(), fx["agg/out"])


def test_str_keys_lists(fx):
    kv = mx.kv.create("local")
    kv.init(["a", "b"], [mx.nd.zeros((2, 5)), mx.nd.zeros((2, 5))])
    kv.push(["a", "b"], [nd_list(fx[f"str/in/{k}"]) for k in "ab"])
    outs = [[mx.nd.zeros((2, 5)) for _ in range(2)] for _ in "ab"]
    kv.pull(["a", "b"], out=outs)
    for k, o in zip("ab", outs):
        np.testing.assert_array_equal(o[1].asnumpy(), fx[f"str/out/{k}"])


def test_pushpull_and_broadcast(fx):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((2, 5)))
    src, dst = nd_list(fx["pushpull/in"]), mx.nd.zeros((2, 5))
    kv.pushpull(0, src, out=dst)
    np.testing.assert_array_equal(dst.asnumpy(), fx["pushpull/out"])
    kv.pushpull(0, src)
    for s in src:
        np.testing.assert_array_equal(s.asnumpy(), fx["pushpull/inplace"])
    kv = mx.kv.create("local")
    outs = [mx.nd.zeros((2, 5)) for _ in range(3)]
    kv.broadcast("w", mx.nd.array(fx["bcast/in"]), out=outs)
    np.testing.assert_array_equal(outs[2].asnumpy(), fx["bcast/out"])
    with pytest.raises(MXNetError, match="duplicate init of key w"):
        kv.broadcast("w", mx.nd.array(fx["bcast/in"]), out=outs)


def test_pushed_array_not_aliased():
    # MXNet's single-copy push aliases the pushed array; symgraph copies it
    kv = mx.kv.create("local")
    kv.init(1, mx.nd.zeros((2,)))
    a = mx.nd.ones((2,))
    kv.push(1, a)
    a[:] = 5
    out = mx.nd.zeros((2,))
    kv.pull(1, out=out)
    assert out.asnumpy().tolist() == [1.0, 1.0]


# ---------------------------------------------------------------- optimizer
@pytest.mark.parametrize("make", UPDATERS.values(), ids=UPDATERS.keys())
def test_update_on_kvstore_sgd_momentum(fx, make):
    kv = mx.kv.create("local")
    if make is UPDATERS["real"]:
        updater = make()
        kv.set_optimizer(updater.optimizer)
    else:
        kv._set_updater(make())
    kv.init(5, mx.nd.array(fx["sgd/in/w0"]))
    w = [mx.nd.zeros((2, 5), ctx=mx.cpu(i)) for i in range(2)]
    for step in range(3):
        kv.push(5, nd_list(fx["sgd/in/grads"][step]))
        kv.pull(5, out=w)
        np.testing.assert_allclose(w[1].asnumpy(), fx[f"sgd_kv/out/{step}"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("make", UPDATERS.values(), ids=UPDATERS.keys())
def test_local_updater_matches_store_update(fx, make):
    kv, updater = mx.kv.create("local"), make()
    kv.init(5, mx.nd.array(fx["sgd/in/w0"]))
    w = nd_list([fx["sgd/in/w0"]] * 2)
    for step in range(3):
        g = nd_list(fx["sgd/in/grads"][step])
        kv.pushpull(5, g)
        for k in range(2):
            updater(5 * 2 + k, g[k], w[k])
        got = np.stack([x.asnumpy() for x in w])
        np.testing.assert_allclose(got, fx[f"sgd_local/out/{step}"], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got[0], fx[f"sgd_kv/out/{step}"], rtol=1e-6, atol=1e-6)


def test_updater_gets_key_and_store_weight():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((2,)))
    seen = []
    kv.set_updater(lambda key, g, w: (seen.append(key), w.__setitem__(slice(None), w + 2 * g)))
    kv.push("w", [mx.nd.ones((2,)), mx.nd.ones((2,), ctx=mx.cpu(1))])
    out = mx.nd.zeros((2,))
    kv.pull("w", out=out)
    assert seen == ["w"] and out.asnumpy().tolist() == [5.0, 5.0]


def test_save_load_optimizer_states_round_trip(fx, tmp_path):
    grads = fx["sgd/in/grads"]
    ref = mx.kv.create("local")
    ref._set_updater(StandInUpdater(**SGD))
    ref.init(5, mx.nd.array(fx["sgd/in/w0"]))
    for step in range(3):
        ref.push(5, nd_list(grads[step]))
    kv = mx.kv.create("local")
    kv._set_updater(StandInUpdater(**SGD))
    kv.init(5, mx.nd.array(fx["sgd/in/w0"]))
    kv.push(5, nd_list(grads[0]))
    path = str(tmp_path / "opt.states")
    kv.save_optimizer_states(path)
    assert sorted(os.listdir(tmp_path)) == ["opt.states"]  # no temp file left behind
    w = mx.nd.zeros((2, 5))
    kv.pull(5, out=w)
    kv2 = mx.kv.create("local")  # a fresh store restarts from the saved weight and states
    kv2._set_updater(StandInUpdater(**SGD))
    kv2.init(5, w)
    kv2.load_optimizer_states(path)
    for step in (1, 2):
        kv2.push(5, nd_list(grads[step]))
    a, b = mx.nd.zeros((2, 5)), mx.nd.zeros((2, 5))
    ref.pull(5, out=a)
    kv2.pull(5, out=b)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    with pytest.raises(MXNetError, match="no optimizer"):
        mx.kv.create("local").save_optimizer_states(path)


# ---------------------------------------------------------------- 2-bit compression
@pytest.mark.parametrize("case,kind,upd", [("gc2", "device", False), ("gc1", "device", False),
                                           ("gcadd", "local_allreduce_device", True)])
def test_two_bit_compression_residual(fx, case, kind, upd):
    kv = mx.kv.create(kind)
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    if upd:
        kv._set_updater(lambda key, g, w: w.__iadd__(g))
    kv.init("k", mx.nd.array(fx[f"{case}/in/w0"]))
    res = mx.nd.zeros((2, 5))
    for step, grads in enumerate(fx[f"{case}/in/grads"]):
        kv.push("k", nd_list(grads))
        kv.pull("k", out=res)
        np.testing.assert_array_equal(res.asnumpy(), fx[f"{case}/out/{step}"])


@pytest.mark.parametrize("params,msg", [
    ({"type": "1bit"}, "Unknown type for gradient compression 1bit"),
    ({"threshold": 0.5}, "Required parameter type"),
    ({"type": "2bit", "threshold": -1}, "threshold must be greater than 0"),
])
def test_compression_param_errors(params, msg):
    with pytest.raises(MXNetError, match=msg):
        mx.kv.create("device").set_gradient_compression(params)
    with pytest.raises(MXNetError, match="not supported for this type"):
        mx.kv.create("local").set_gradient_compression({"type": "2bit"})


# ---------------------------------------------------------------- types, errors, registry
@pytest.mark.parametrize("name,kind", [("local", "local"), ("LOCAL", "local"),
                                       ("device", "device"),
                                       ("local_update_cpu", "local_update_cpu"),
                                       ("local_allreduce_cpu", "local_allreduce_cpu"),
                                       ("local_allreduce_device", "local_allreduce_device")])
def test_types(name, kind):
    kv = mx.kv.create(name)
    assert (kv.type, kv.rank, kv.num_workers) == (kind, 0, 1)
    assert kv.is_capable("optimizer") and kv.barrier() is None and kv._barrier() is None


def test_errors():
    kv = mx.kv.create()
    kv.init(3, mx.nd.ones((2, 3)))
    with pytest.raises(MXNetError, match="duplicate init of key 3"):
        kv.init(3, mx.nd.ones((2, 3)))
    with pytest.raises(MXNetError, match="duplicate init of key 7"):
        kv.init(7, [mx.nd.ones((2, 3)), mx.nd.ones((2, 3))])
    with pytest.raises(MXNetError, match="key 9 has not been inited"):
        kv.pull(9, out=mx.nd.zeros((2, 3)))
    with pytest.raises(MXNetError, match="Mixed key types are not allowed"):
        kv.init("a", mx.nd.ones((2, 3)))
    with pytest.raises(MXNetError, match="shape mismatch"):
        kv.pull(3, out=mx.nd.zeros((3, 3)))
    with pytest.raises(MXNetError, match="row_sparse"):
        kv.row_sparse_pull(3, out=mx.nd.zeros((2, 3)), row_ids=mx.nd.array([0]))
    with pytest.raises(ValueError, match="Unknown capability: foo"):
        kv.is_capable("foo")
    kvs = mx.kv.create()
    with pytest.raises(MXNetError, match="key zz doesn't exist. Did you init"):
        kvs.push("zz", mx.nd.zeros((2, 3)))
    with pytest.raises(MXNetError, match="inconsistent types of keys"):
        kvs.init([5, "b"], [mx.nd.ones((2,))] * 2)
    with pytest.raises(TypeError, match="name must be a string"):
        mx.kv.create(3)
    with pytest.raises(MXNetError, match="not supported"):
        mx.kv.create("nccl")


def test_registered_subclass_created_by_name():
    @mx.kv.KVStoreBase.register
    class RecordingStore(mx.kv.KVStoreBase):
        def pushpull(self, key, value, out=None, priority=0):
            total = sum(v.asnumpy() for v in value)
            for o in out if isinstance(out, list) else [out]:
                o[:] = mx.nd.array(total)

        @property
        def type(self):
            return "recording"

    kv = mx.kv.create("RecordingStore")
    assert isinstance(kv, RecordingStore) and kv.type == "recording"
    out = mx.nd.zeros((2,))
    kv.pushpull(0, [mx.nd.ones((2,)), mx.nd.ones((2,))], out=out)
    assert out.asnumpy().tolist() == [2.0, 2.0]
    with pytest.warns(UserWarning, match="overriding existing kvstore"):
        mx.kv.KVStoreBase.register(type("RecordingStore", (mx.kv.KVStoreBase,), {}))
    del mx.kv.KVStoreBase.kv_registry["recordingstore"]
    with pytest.raises(NotImplementedError):
        _ = mx.kv.KVStoreBase().rank  # the base class is abstract
