"""Drop-in behaviour: the ``mxnet`` alias, ``python -m symgraph run``, the operator functions
generated from the registry, MXNet's op namespaces, and the names MXNet code imports at the
top of a file (behaviour from MXNet 1.9.1, checked against its oracle when written)."""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgraph as mx
from symgraph import alias
from symgraph.base import MXNetError, OpNotImplementedError, UnsupportedError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(tmp_path, code: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, "-m", "symgraph", "run", *args, str(script)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, **(env or {})})


# ---------------------------------------------------------------- the alias
def test_run_command_resolves_every_mxnet_module_to_symgraph(tmp_path):
    proc = _run(tmp_path, """
        import sys
        import mxnet as mx
        import mxnet.ndarray as nd
        from mxnet.module.executor_group import DataParallelExecutorGroup
        from mxnet.gluon import nn
        from mxnet.base import MXNetError
        import mxnet.contrib.ndarray as contrib_nd  # the support matrix found it missing
        import symgraph, symgraph.module.executor_group
        assert contrib_nd is mx.nd.contrib
        assert mx is symgraph and nd is symgraph.ndarray and mx.nd is nd
        assert DataParallelExecutorGroup is \
            symgraph.module.executor_group.DataParallelExecutorGroup
        assert nn is symgraph.gluon.nn and MXNetError is symgraph.base.MXNetError
        assert sys.modules["mxnet.ndarray"] is nd
        assert nd.__spec__.name == "symgraph.ndarray"  # symgraph's own spec is kept
        print(mx.__version__, mx.SYMGRAPH_VERSION, sys.argv[1:])
    """, "--shadow")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == "1.9.1"


def test_script_arguments_and_exit_status_pass_through(tmp_path):
    proc = _run(tmp_path, "import sys\nprint(sys.argv)\nsys.exit(3)\n")
    assert proc.returncode == 3
    assert proc.stdout.strip().endswith("script.py']")


def test_child_processes_inherit_the_alias(tmp_path):
    proc = _run(tmp_path, """
        import subprocess, sys
        out = subprocess.run([sys.executable, "-c", "import mxnet; print(mxnet.__name__)"],
                             capture_output=True, text=True)
        print(out.stdout.strip(), out.returncode)
    """)
    assert proc.stdout.split() == ["symgraph", "0"], proc.stderr


def test_run_refuses_to_shadow_a_real_mxnet(tmp_path):
    fake = tmp_path / "site" / "mxnet"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL = True\n")
    env = {"PYTHONPATH": str(tmp_path / "site")}
    proc = _run(tmp_path, "import mxnet\nprint(mxnet.__name__)\n", env=env)
    assert proc.returncode == 2 and "refusing to shadow" in proc.stderr
    proc = _run(tmp_path, "import mxnet\nprint(mxnet.__name__)\n", "--shadow", env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "symgraph"
    assert "hiding the MXNet installed" in proc.stderr


def test_run_usage_errors(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "symgraph"], capture_output=True, text=True)
    assert proc.returncode != 0 and "usage: python -m symgraph run" in proc.stderr


def test_module_mapping_table():
    assert alias.target_module("mxnet") == "symgraph"
    assert alias.target_module("mxnet.name") == "symgraph.symbol.naming"
    assert alias.target_module("mxnet.gluon.nn") == "symgraph.gluon.nn"


# ---------------------------------------------------------------- modules left out
def test_unsupported_modules_import_and_raise_on_use(tmp_path):
    proc = _run(tmp_path, """
        import mxnet as mx
        import mxnet.numpy as np_
        import mxnet.rtc
        from mxnet.contrib.amp import amp
        assert mx.np is np_ and mx.viz is mx.visualization
        for call in (lambda: mx.rtc.CudaModule(""), amp.init):
            try:
                call()
            except mx.base.UnsupportedError as err:
                print(str(err).split(" is not")[0])
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["mx.rtc.CudaModule", "mx.contrib.amp.amp.init"]


def test_small_modules_behave_as_mxnet():
    assert mx.engine.set_bulk_size(7) == 15
    with mx.engine.bulk(3):
        assert mx.engine.set_bulk_size(3) == 3
    assert mx.engine.set_bulk_size(15) == 7
    assert mx.mon is mx.monitor and mx.rnd is mx.random
    assert issubclass(mx.error.InternalError, MXNetError)


# ---------------------------------------------------------------- nd from the registry
def test_nd_functions_come_from_the_operator_registry():
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(mx.nd.broadcast_add(a, mx.nd.ones((1, 3))).asnumpy(),
                                  a.asnumpy() + 1)
    fc = mx.nd.FullyConnected(a, mx.nd.ones((4, 3)), mx.nd.zeros((4,)), num_hidden=4)
    np.testing.assert_array_equal(fc.asnumpy(), np.full((2, 4), [[6], [15]]))
    np.testing.assert_array_equal(mx.nd.one_hot(mx.nd.array([0, 2]), depth=3).asnumpy(),
                                  np.eye(3)[[0, 2]])
    parts = mx.nd.split(a, num_outputs=3, axis=1)
    assert isinstance(parts, list) and [p.shape for p in parts] == [(2, 1)] * 3
    np.testing.assert_array_equal(mx.nd._internal._plus_scalar(a, scalar=1).asnumpy(),
                                  a.asnumpy() + 1)
    assert mx.nd.Convolution(mx.nd.ones((1, 1, 5, 5)), mx.nd.ones((2, 1, 3, 3)),
                             mx.nd.zeros((2,)), kernel=(3, 3), num_filter=2).shape == (1, 2, 3, 3)


def test_out_argument_writes_and_returns_the_given_array():
    out = mx.nd.zeros((2,))
    assert mx.nd.relu(mx.nd.array([-1, 2]), out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), [0, 2])
    assert mx.nd.broadcast_mul(mx.nd.array([1, 2]), mx.nd.array([3, 3]), out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), [3, 6])
    with pytest.raises(MXNetError, match="shape"):
        mx.nd.relu(mx.nd.ones((3,)), out=out)


def test_imperative_ops_return_new_arrays_not_views():
    a = mx.nd.ones((2, 3))
    b = mx.nd.Reshape(a, shape=(3, 2))
    b[:] = 5
    assert a.asnumpy().sum() == 6


def test_generated_functions_record_for_autograd():
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    with mx.autograd.record():
        z = mx.nd.sum(mx.nd.broadcast_mul(x, a))
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), a.asnumpy())


def test_imperative_errors_name_operator_and_inputs():
    with pytest.raises(MXNetError, match="required input 'weight' is missing"):
        mx.nd.FullyConnected(mx.nd.ones((2, 3)), num_hidden=4)
    with pytest.raises(MXNetError, match="Cannot find argument 'bogus'"):
        mx.nd.one_hot(mx.nd.ones((2,)), depth=3, bogus=1)
    # an operator without parameters keeps unknown keywords, as MXNet's do
    assert mx.nd.broadcast_maximum(mx.nd.ones((2,)), mx.nd.ones((2,)), axis=1).shape == (2,)


def test_mxnet_operators_not_implemented_exist_and_raise():
    """An MXNet operator symgraph lacks (docs/compat.md lists them) exists and raises."""
    assert hasattr(mx.nd.contrib, "edge_id") and hasattr(mx.sym.contrib, "edge_id")
    assert hasattr(mx.nd.linalg, "gemm")
    assert not hasattr(mx.nd, "no_such_operator")
    with pytest.raises(OpNotImplementedError, match="operator '_contrib_edge_id'"):
        mx.nd.contrib.edge_id(mx.nd.ones((3, 3)), mx.nd.ones((1,)), mx.nd.ones((1,)))
    with pytest.raises(UnsupportedError, match="_contrib_edge_id"):
        mx.sym.contrib.edge_id(mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c"))


def test_fluent_methods_on_ndarray_and_symbol():
    a = mx.nd.array([[1, 2], [3, 4]])
    assert a.tile(reps=(1, 2)).shape == (2, 4)
    np.testing.assert_allclose(a.softmax().asnumpy().sum(axis=1), [1, 1], rtol=1e-6)
    sym = mx.sym.var("x").exp().sum(axis=1, name="s")
    assert sym.name == "s" and sym.tojson().count('"op": "exp"') == 1


# ---------------------------------------------------------------- symbol helpers
def test_symbol_scalar_helpers_choose_mxnet_ops():
    x = mx.sym.var("x")
    assert '"_maximum_scalar"' in mx.sym.maximum(x, 0.5).tojson().replace(" ", "") or \
        mx.sym.maximum(x, 0.5).get_internals().list_outputs()[-1].startswith("_maximumscalar")
    assert mx.sym.pow(2, x).get_internals().list_outputs() == ["x", "_rpowerscalar0_output"]
    assert mx.sym.pow(2, 3) == 8 and mx.sym.minimum(1, 2) == 1
    out = mx.sym.minimum(x, mx.sym.var("y")).eval(x=mx.nd.array([1, 5]), y=mx.nd.array([3, 2]))
    np.testing.assert_array_equal(out[0].asnumpy(), [1, 2])


def test_symbol_pickles_as_json_and_attr_reads_hidden_keys():
    net = mx.sym.FullyConnected(mx.sym.var("w", lr_mult=2), num_hidden=3, name="fc", lr_mult=3)
    assert pickle.loads(pickle.dumps(net)).tojson() == net.tojson()
    assert net.attr("lr_mult") == "3" and mx.sym.var("w", lr_mult=2).attr("lr_mult") == "2"
    assert mx.sym.var("w", shape=(2,)).attr("shape") is None


# ---------------------------------------------------------------- MXNet's Python-level nd
def test_ndarray_converts_for_numpy_and_pickles_in_mxnet_raw_format():
    a = mx.nd.array([50000001], dtype="int32")
    assert np.all(a == 50000001)  # MXNet's tests rely on numpy reading NDArrays
    b = pickle.loads(pickle.dumps(mx.nd.array([[1, 2]], dtype="int64")))
    assert b.dtype == np.int64 and b.asnumpy().tolist() == [[1, 2]]
    state = mx.nd.ones((2,)).__getstate__()["handle"]
    assert int.from_bytes(state[:4], "little") == 0xF993FAC9  # MXNet's V2 array magic
    with pytest.raises(MXNetError, match="unexpected bytes"):
        mx.nd.NDArray(mx.nd.ones((1,))._t).__setstate__({"handle": state + b"x"})


def test_python_level_nd_functions():
    np.testing.assert_array_equal(mx.nd.eye(3, 4, 1).asnumpy(), np.eye(3, 4, 1))
    np.testing.assert_array_equal(mx.nd.eye(3, 2, -10).asnumpy(), np.eye(3, 2, -10))
    np.testing.assert_allclose(mx.nd.linspace(2, -1, 4, endpoint=False).asnumpy(),
                               np.linspace(2, -1, 4, endpoint=False))
    assert mx.nd.moveaxis(mx.nd.zeros((2, 3, 4)), [0, 1], [-1, 0]).shape == (3, 4, 2)
    assert mx.nd.concatenate([mx.nd.ones((1, 2)), mx.nd.zeros((2, 2))]).shape == (3, 2)
    op = mx.nd.CachedOp(mx.sym.var("a") * 2 + mx.sym.var("b"))
    np.testing.assert_array_equal(op(mx.nd.ones((2,)), mx.nd.ones((2,))).asnumpy(), [3, 3])
    x = np.arange(4, dtype="float32")
    shared = mx.nd.from_numpy(x)
    shared[0] = 7  # the memory is shared and now the NDArray's: numpy may only read it
    assert x[0] == 7
    with pytest.raises(ValueError):
        x[1] = 0
    back = mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(shared))
    assert back.asnumpy().tolist() == [7, 1, 2, 3]
    out = mx.nd.zeros((2, 2))
    assert mx.nd.ones((2, 2), out=out) is out and out.asnumpy().sum() == 4


def test_contrib_nan_helpers_and_slice_assign():
    a = mx.nd.array([1, float("nan"), float("inf")])
    assert mx.nd.contrib.isnan(a).asnumpy().tolist() == [0, 1, 0]
    assert mx.nd.contrib.isinf(a).asnumpy().tolist() == [0, 0, 1]
    assert mx.nd.contrib.isfinite(a).asnumpy().tolist() == [1, 0, 0]
    b = mx.nd.ones((2, 3))
    b.slice_assign(mx.nd.zeros((1, 3)), (0, 0), (1, 3), (None, None))
    b.slice_assign_scalar(5, (1, 0), (2, 2), (None, None))
    assert b.asnumpy().tolist() == [[0, 0, 0], [5, 5, 1]]


def test_mxnet_argument_forms():
    a = mx.nd.array([[1, 2], [3, 4]])
    assert a.norm(ord=1).asscalar() == 10 and a.sum(keepdims=1).shape == (1, 1)
    assert a.broadcast_to(shape=np.array([2, 2])).shape == (2, 2)
    assert mx.sym.transpose(mx.sym.var("x"), axes=(np.int64(0),)).attr("axes") == "(0,)"
    is_contiguous = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    assert is_contiguous((slice(1, 3), slice(None)), (4, 5))
    assert not is_contiguous((slice(None), slice(1, 3)), (4, 5))
    assert is_contiguous((slice(2, 3), slice(1, 3)), (4, 5))
    assert not is_contiguous((slice(None, None, -1), slice(None)), (4, 5))


def test_contrib_autograd_and_zipfian():
    from symgraph.contrib import autograd as cag
    x = mx.nd.array([1.0, 2.0])
    grads, loss = cag.grad_and_loss(lambda v: v * v)(x)
    np.testing.assert_array_equal(grads[0].asnumpy(), [2, 4])
    assert mx.contrib.ndarray is mx.nd.contrib and mx.contrib.symbol is mx.sym.contrib
    mx.random.seed(3)
    sampled, exp_true, exp_sampled = mx.nd.contrib.rand_zipfian(mx.nd.array([3, 5]), 6, 10)
    assert sampled.dtype == np.int64 and sampled.shape == (6,)
    assert ((sampled.asnumpy() >= 0) & (sampled.asnumpy() < 10)).all()
    log_range = np.log(11)
    np.testing.assert_allclose(exp_true.asnumpy(), np.log(np.array([5, 7]) / [4, 6]) /
                               log_range * 6, rtol=1e-6)
    with pytest.raises(UnsupportedError, match="contrib.amp"):
        mx.contrib.amp.init()


def test_pytest_under_the_alias_sees_one_test_utils_module(tmp_path):
    (tmp_path / "test_inner.py").write_text(textwrap.dedent("""
        import mxnet as mx
        import mxnet.test_utils as tu
        import symgraph.test_utils

        def test_same_module():
            assert tu is mx.test_utils is symgraph.test_utils
    """))
    proc = subprocess.run([sys.executable, "-m", "symgraph", "run", "-m", "pytest", "-q",
                           "-p", "no:cacheprovider", "test_inner.py"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_numpy_calls_reach_reductions_and_sparse_requests_work():
    a = mx.nd.array([[1, 5], [7, 2]])
    assert np.argmax(a, axis=1).asnumpy().tolist() == [1, 0]  # numpy passes out=None
    out = mx.nd.zeros((1,))
    assert a.sum(out=out) is out and out.asscalar() == 15
    assert mx.nd.zeros((2, 2), stype="csr").stype == "csr"
    exe = mx.sym.var("x").simple_bind(mx.cpu(), x=(2, 3), stype_dict={"x": "csr"})
    assert exe.arg_dict["x"].stype == "csr"


def test_group2ctx_places_each_groups_arrays():
    with mx.AttrScope(ctx_group="stage1"):
        net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc1")
    with mx.AttrScope(ctx_group="stage2"):
        net = mx.sym.FullyConnected(net, num_hidden=2, name="fc2")
    groups = {"stage1": mx.cpu(1), "stage2": mx.cpu(2)}
    exe = net.simple_bind(mx.cpu(0), group2ctx=groups, data=(3, 5))
    for name, arr in exe.arg_dict.items():
        assert arr.context == groups["stage1" if name.startswith(("data", "fc1")) else "stage2"]
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((3, 2)))
    assert exe.grad_dict["fc2_weight"].context == mx.cpu(2)


def test_shape_methods_record_under_autograd():
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = (x.transpose().flatten().expand_dims(axis=0).squeeze().reshape((-1,)) * 2)
        z = y.clip(0, 5).sum() + mx.nd.make_loss(x).sum()
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((2, 3), 3.0))


def test_submodules_of_left_out_modules_are_stand_ins(tmp_path):
    proc = _run(tmp_path, """
        import mxnet as mx
        from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule
        try:
            SVRGModule(None)
        except mx.base.UnsupportedError as err:
            print("svrg" in str(err).lower())
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr


def test_module_keeps_its_grad_req():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None)
    mod.bind(data_shapes=[("data", (3, 4))], grad_req="add")
    assert mod._grad_req == "add"  # MXNet's handle, read by BucketingModule's buckets


def test_names_mxnet_modules_define_resolve_from_their_module_paths():
    """``from mxnet.ndarray.ndarray import zeros`` and the like: names MXNet's module files
    define, which symgraph's package holds elsewhere (found by the support matrix)."""
    from symgraph.error import register
    from symgraph.io.io import MXDataIter, PrefetchingIter
    from symgraph.model import BASE_ESTIMATOR
    from symgraph.ndarray.ndarray import concatenate, onehot_encode, zeros
    from symgraph.ndarray.utils import load, save
    from symgraph.optimizer.optimizer import SGD, Adam, create
    from symgraph.rnn.rnn_cell import ConvLSTMCell, FusedRNNCell
    from symgraph.symbol.symbol import load as sym_load
    from symgraph.symbol.symbol import var
    assert zeros is mx.nd.zeros and concatenate is mx.nd.concatenate
    assert onehot_encode is mx.nd.onehot_encode and save is mx.nd.save and load is mx.nd.load
    assert Adam is mx.optimizer.Adam and SGD is mx.optimizer.SGD and create is mx.optimizer.create
    assert sym_load is mx.sym.load and var is mx.sym.var
    assert PrefetchingIter is mx.io.PrefetchingIter and MXDataIter is mx.io.MXDataIter
    assert ConvLSTMCell is mx.rnn.ConvLSTMCell and FusedRNNCell is mx.rnn.FusedRNNCell
    assert register is mx.base.register_error and BASE_ESTIMATOR is object
    with pytest.raises(AttributeError, match="symgraph.ndarray.ndarray.*no_such"):
        import symgraph.ndarray.ndarray as module
        module.no_such  # noqa: B018
