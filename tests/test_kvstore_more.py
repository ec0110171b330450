"""The test store (``mx.kv.create('teststore')``) and ``KVStoreServer`` (MXNet 1.9.1's
behaviour; cases follow MXNet's unittest/test_kvstore_custom.py)."""
from __future__ import annotations

import pickle

import pytest

import symgraph as mx
from symgraph.base import UnsupportedError


def test_teststore_is_registered():
    kv = mx.kv.create("teststore")
    assert type(kv) is mx.kv.TestStore and kv.type == "teststore"
    assert (kv.rank, kv.num_workers) == (0, 1)
    assert type(kv).is_capable("optimizer") is False  # a static method, as MXNet's
    with pytest.raises(ValueError, match="Unknown capability"):
        kv.is_capable("sparse")


def test_teststore_broadcast_and_pushpull():
    """MXNet's test_kvstore_custom.py::test_custom_store."""
    kv = mx.kv.create("teststore")
    out = mx.nd.empty((1,))
    kv.broadcast(1, mx.nd.ones((1,)), out=out)
    assert out.asnumpy().tolist() == [1]
    arr_list = [mx.nd.empty((1,))] * 2
    kv.pushpull(1, [mx.nd.ones((1,))] * 2, out=arr_list)
    assert [a.asnumpy().tolist() for a in arr_list] == [[2], [2]]
    kv.pushpull(1, arr_list)  # no out: the sum goes back into the values
    assert [a.asnumpy().tolist() for a in arr_list] == [[4], [4]]
    single = mx.nd.zeros((2,))
    kv.pushpull("w", mx.nd.ones((2,)) * 3, out=single)
    assert single.asnumpy().tolist() == [3, 3]


@pytest.mark.parametrize("method, args", [
    ("set_optimizer", (mx.optimizer.create("sgd"),)),
    ("save_optimizer_states", ("test",)), ("load_optimizer_states", ("test",))])
def test_teststore_has_no_optimizer(method, args):
    with pytest.raises(NotImplementedError):
        getattr(mx.kv.create("teststore"), method)(*args)


def test_kvstore_is_capable_stays_an_instance_method():
    assert mx.kv.create("local").is_capable(mx.kv.KVStoreBase.OPTIMIZER) is True


def test_kvstore_server_module_and_class():
    from symgraph.kvstore import kvstore_server
    assert mx.kv.KVStoreServer is kvstore_server.KVStoreServer
    server = mx.kv.KVStoreServer(mx.kv.create("local"))
    assert server.kvstore.type == "local" and server.init_logginig is False


def test_kvstore_server_run_outside_a_server_is_unsupported():
    server = mx.kv.KVStoreServer(mx.kv.create("local"))
    with pytest.raises(UnsupportedError, match="KVStoreServer.run in a worker process"):
        server.run()


def test_kvstore_server_controller_sets_the_optimizer():
    kv = mx.kv.create("local")
    controller = mx.kv.KVStoreServer(kv)._controller()
    controller(0, pickle.dumps(mx.optimizer.create("sgd", learning_rate=0.5)), None)
    kv.init(0, mx.nd.ones((2,)))
    kv.push(0, mx.nd.ones((2,)))
    out = mx.nd.zeros((2,))
    kv.pull(0, out=out)
    assert out.asnumpy().tolist() == [0.5, 0.5]
