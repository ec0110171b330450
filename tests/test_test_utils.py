"""mx.test_utils against MXNet 1.9.1 (values and messages recorded from MXNet 1.9.1 with the
same numpy seeds; "port" marks tests following MXNet's unittest/test_base.py)."""
import os
import sys

import numpy as np
import pytest
import scipy.stats as ss

import symgraph as mx
from symgraph import test_utils as tu
from symgraph.base import MXNetError, UnsupportedError


def _raises_message(fn, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def _write_idx(path, array: np.ndarray) -> None:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in array.shape)
    with open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def mnist_dir(tmp_path, monkeypatch):
    """A working directory holding tiny MNIST ubyte files under data/."""
    monkeypatch.chdir(tmp_path)
    os.makedirs("data")
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 70), ("t10k", 40)):
        _write_idx(f"data/{prefix}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28)))
        _write_idx(f"data/{prefix}-labels-idx1-ubyte", rng.integers(0, 10, n))
    return tmp_path


# --- tolerances ----------------------------------------------------------------------------

def test_default_tolerances():
    f16, f32, f64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
    assert (tu.default_rtols()[f16], tu.default_rtols()[f32], tu.default_rtols()[f64]) == \
        (1e-2, 1e-4, 1e-5)
    assert (tu.default_atols()[f16], tu.default_atols()[f32], tu.default_atols()[f64]) == \
        (1e-1, 1e-3, 1e-20)
    assert tu.default_rtols()[np.dtype(np.int32)] == 0 == tu.default_atols()[np.dtype(np.bool_)]
    assert tu.default_numeric_eps() == {f16: 1 / 64, f32: 1 / 512, f64: 1 / 16384}
    assert tu.default_dtype() is np.float32


def test_get_tols_takes_the_looser_dtype():
    assert tu.get_tols(np.ones(1, np.float16), np.ones(1), None, None) == (0.01, 0.1)
    assert tu.get_tols(mx.nd.ones(1), 1.0, None, None) == (1e-4, 1e-3)
    assert tu.get_tols(np.ones(1, np.int32), np.ones(1, np.int64), None, None) == (0, 0)
    assert tu.get_tols(np.ones(1), np.ones(1), 0.5, 0.25) == (0.5, 0.25)
    custom = {np.dtype(np.float32): 0.3}
    assert tu.get_tolerance(np.ones(1, np.float32), custom, tu.default_rtols()) == 0.3
    assert tu.get_tolerance(np.ones(1), custom, tu.default_rtols()) == 1e-5
    assert (tu.get_rtol(), tu.get_atol(), tu.get_etol()) == (1e-5, 1e-20, 0)
    assert tu.get_rtol(dtype=np.float16) == 1e-2 and tu.get_atol(0.5) == 0.5
    assert tu.effective_dtype(mx.nd.ones(1, dtype="float16")) == np.float16


# --- comparisons ---------------------------------------------------------------------------

def test_assert_almost_equal_message_matches_mxnet(capsys):
    msg = _raises_message(tu.assert_almost_equal, np.array([[1.0, 2.0], [3.0, 4.0]]),
                          np.array([[1.0, 2.5], [3.1, 4.0]]), names=("x", "y"))
    assert msg == ("\nItems are not equal:\nError 20000.000000 exceeds tolerance "
                   "rtol=1.000000e-05, atol=1.000000e-20 (mismatch 50.000000%).\nLocation of "
                   "maximum error: (0, 1), x=2.00000000, y=2.50000000\n ACTUAL: array([[1., 2.],"
                   "\n       [3., 4.]])\n DESIRED: array([[1. , 2.5],\n       [3.1, 4. ]])")
    printed = capsys.readouterr().out
    assert "  1: Error 20000.000000  Location of error: (0, 1), x=2.00000000, y=2.50000000" \
        in printed
    assert "  2: Error 3225.806452  Location of error: (1, 0), x=3.00000000, y=3.10000000" \
        in printed


def test_assert_almost_equal_counts_at_most_mismatches(capsys):
    msg = _raises_message(tu.assert_almost_equal, np.arange(30.), np.arange(30.) + 1,
                          mismatches=(3, 5))
    assert "(mismatch at least 20.000000%)" in msg
    assert "Location of maximum error: (0,), a=0.00000000, b=1.00000000" in msg
    assert capsys.readouterr().out.count("Error ") == 3
    scalar = _raises_message(tu.assert_almost_equal, np.float64(1.0), np.float64(2.0))
    assert "Error 50000.000000 exceeds tolerance rtol=1.000000e-05, atol=1.000000e-20.\n" \
        in scalar
    shapes = _raises_message(tu.assert_almost_equal, np.ones(3), np.ones(2), use_broadcast=False)
    assert "a.shape = (3,) and b.shape = (2,) are not equal" in shapes


def test_assert_almost_equal_accepts_tolerances_and_ndarrays():
    tu.assert_almost_equal(mx.nd.array([1.0, 2.0]), np.array([1.0, 2.0005], np.float32))
    tu.assert_almost_equal(np.ones(3), np.ones((2, 3)))  # broadcasts by default
    tu.assert_almost_equal(np.array([1.0]), np.array([1.2]), rtol=0.5)
    tu.assert_almost_equal(np.array([1.0]), np.array([1.2]),
                           atol={np.dtype(np.float64): 0.3}, rtol=0)
    tu.assert_almost_equal(np.array([np.nan]), np.array([np.nan]), equal_nan=True)
    _raises_message(tu.assert_almost_equal, np.array([np.nan]), np.array([np.nan]))
    _raises_message(tu.assert_almost_equal, np.array([True]), np.array([False]))
    tu.assert_allclose(np.array([1.0, np.nan]), np.array([1.0, np.nan]))


def test_almost_equal_and_friends():
    assert tu.almost_equal(np.array([1.0]), np.array([1.0 + 1e-6]))
    assert not tu.almost_equal(np.array([1.0]), np.array([1.0 + 1e-4]))
    assert tu.same(np.arange(3), mx.nd.array([0, 1, 2]).asnumpy()) and not tu.same([1], [2])
    tu.assert_almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([np.nan, 2.0]))
    a = np.array([1.0, 2.0, 3.0, 9.0])
    tu.assert_almost_equal_with_err(a, np.arange(1.0, 5.0), etol=0.3)
    _raises_message(tu.assert_almost_equal_with_err, a, np.arange(1.0, 5.0), etol=0.2)
    _raises_message(tu.assert_almost_equal_with_err, a, np.arange(1.0, 5.0))
    assert tu.locationError(a, a, (1,), ("p", "q"), maxError=True) == \
        "Location of maximum error: (1,), p=2.00000000, q=2.00000000"
    with pytest.raises(AssertionError):
        tu.checkShapes(np.ones(2), np.ones(3))


def test_assert_exception():
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError, match="int did not raise TypeError"):
        tu.assert_exception(int, TypeError, "1")


def test_retry_reruns_until_success():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 3
    flaky()
    assert len(calls) == 3

    @tu.retry(2)
    def always_fails():
        calls.append(1)
        raise AssertionError("no")
    with pytest.raises(AssertionError, match="no"):
        always_fails()
    assert len(calls) == 5


# --- environment and process helpers -------------------------------------------------------

def test_environment_context_manager():  # port of test_base.test_environment
    name1, name2 = "MXNET_TEST_ENV_VAR_1", "MXNET_TEST_ENV_VAR_2"
    with tu.environment(name1, "42"):
        assert os.environ.get(name1) == "42" and tu.getenv(name1) == "42"
    assert name1 not in os.environ
    with tu.environment({name1: "1", name2: "2"}):
        assert (tu.getenv(name1), tu.getenv(name2)) == ("1", "2")
    assert tu.getenv(name1) is None and tu.getenv(name2) is None


@tu.environment({"MXNET_TEST_ENV_VAR_1": "10", "MXNET_TEST_ENV_VAR_2": None})
def test_environment_decorator_restores_on_errors():  # port of test_with_environment
    name1, name2 = "MXNET_TEST_ENV_VAR_1", "MXNET_TEST_ENV_VAR_2"
    for name, value in ((name1, "42"), (name1, None), (name2, "42"), (name2, None)):
        with pytest.raises(KeyError):
            with tu.environment(name, value):
                assert tu.getenv(name) == value
                raise KeyError
        assert (tu.getenv(name1), tu.getenv(name2)) == ("10", None)


def test_discard_stderr(capfd):
    fd = sys.stderr.fileno()  # what MXNet's helper silences (2 outside pytest's capture)
    with tu.discard_stderr():
        os.write(fd, b"hidden")
    os.write(fd, b"shown")
    assert capfd.readouterr().err == "shown"


def test_platform_queries():
    with tu.environment("CD_JOB", "1"):
        assert tu.is_cd_run()
    with tu.environment("CD_JOB", None):
        assert not tu.is_cd_run()
    assert tu.is_aarch64_run() == (os.uname().machine == "aarch64")
    assert list(tu.list_gpus()) == list(range(mx.context.num_gpus()))
    assert tu.has_tvm_ops() is False and tu.is_op_runnable() is True


def test_default_context_is_the_current_context():
    assert tu.default_context() == mx.cpu()
    try:
        tu.set_default_context(mx.cpu(1))
        assert tu.default_context() == mx.cpu(1) == mx.current_context()
        assert mx.nd.zeros((1,)).context == mx.cpu(1)
    finally:
        tu.set_default_context(mx.cpu(0))


def test_module_names_mxnet_tests_import():
    from symgraph.test_utils import Features, Symbol, array
    from symgraph.test_utils import ss as stats
    assert tu.mx is mx and stats is ss
    assert Features is mx.runtime.Features and Symbol is mx.sym.Symbol and array is mx.nd.array
    assert not isinstance(X, tu.np_symbol)
    assert not hasattr(tu, "no_such_helper")


def test_use_np_decorated_tests_raise_unsupported():
    @tu.use_np
    def numpy_test():
        return 1
    with pytest.raises(UnsupportedError):
        numpy_test()


# --- random data ---------------------------------------------------------------------------

def test_random_shapes_match_mxnet_draws():
    np.random.seed(0)
    assert (tu.rand_shape_nd(3), tu.rand_shape_2d(), tu.rand_shape_3d(5, 5, 5, True)) == \
        ((6, 1, 4), (4, 8), (1, 3, 5))
    np.random.seed(1)
    assert tu.random_sample(list(range(10)), 3) == [2, 9, 6]
    np.random.seed(3)
    assert np.allclose(tu.random_arrays((2,)), [1.7886285, 0.43650985])
    one, scalar = tu.random_arrays((1,), ())
    assert one.dtype == np.float32 and scalar.shape == () and np.isclose(scalar, -1.8634927)
    assert all(0 <= d <= 2 for d in tu.rand_shape_nd(50, 2, allow_zero_size=True))
    low, high = tu.random_uniform_arrays((100,), low=2, high=3, dtype=np.float64)[0][[0, 1]]
    assert 2 <= low < 3 and 2 <= high < 3
    with pytest.raises(TypeError, match="unexpected argument"):
        tu.random_uniform_arrays((1,), bad=1)
    x, y = tu.rand_coord_2d(0, 5, 10, 20)
    assert 0 <= x < 5 and 10 <= y < 20


def test_rand_ndarray_every_storage_type():
    a = tu.rand_ndarray((2, 3))
    assert isinstance(a, mx.nd.NDArray) and a.shape == (2, 3) and a.dtype == np.float32
    assert tu.rand_ndarray((2,), dtype="float64").dtype == np.float64
    csr = tu.rand_ndarray((4, 5), stype="csr", density=0.5)
    rsp, (values, rows) = tu.rand_sparse_ndarray((6, 2), "row_sparse", density=1.0)
    assert csr.stype == "csr" and csr.shape == (4, 5)
    assert rsp.stype == "row_sparse" and rows.tolist() == list(range(6))
    np.testing.assert_allclose(rsp.asnumpy(), values)


def test_array_helpers():
    assert tu.np_reduce(np.arange(24.).reshape(2, 3, 4), (0, 2), True, np.max).tolist() == \
        [[[15.0], [19.0], [23.0]]]
    assert tu.np_reduce(np.ones((2, 3)), None, False, np.sum) == 6
    assert tu.collapse_sum_like(np.ones((2, 3, 4)), (3, 1)).tolist() == [[8.0], [8.0], [8.0]]
    assert tu.collapse_sum_like(np.ones((2, 0)), (0,)).shape == (0,)
    assert tu.assign_each(np.array([1, 2, 3]), lambda v: v * 2).tolist() == [2.0, 4.0, 6.0]
    assert tu.assign_each2(np.array([1, 2]), np.array([3, 4]), lambda a, b: a + b).tolist() == \
        [4.0, 6.0]
    assert tu.create_2d_tensor(3, 2).asnumpy().tolist() == [[0, 0], [1, 1], [2, 2]]
    assert tu.create_vector(3).dtype == np.int64
    assert tu.get_identity_mat(2).asnumpy().tolist() == [[1, 0], [0, 1]]
    assert tu.get_identity_mat_batch(2).shape == (2, 2, 2)


def test_same_array_detects_shared_memory():
    a = mx.nd.ones((3,))
    assert tu.same_array(a, a) and tu.same_array(a, a[:]) and not tu.same_array(a, a.copy())
    assert a.asnumpy().tolist() == [1, 1, 1]


def test_matrices():
    np.random.seed(0)
    m = tu.new_matrix_with_real_eigvals_nd((2, 4, 4))
    assert m.shape == (2, 4, 4) and np.allclose(np.linalg.eigvals(m).imag, 0)
    s = tu.new_sym_matrix_with_real_eigvals_nd((3, 3))
    assert np.allclose(s, s.T)
    q = tu.new_orthonormal_matrix_2d(4)
    assert np.allclose(q @ q.T, np.eye(4))


# --- symbol checks -------------------------------------------------------------------------

X, Y = mx.sym.Variable("x"), mx.sym.Variable("y")


def test_check_numeric_gradient():
    location = [np.random.rand(2, 3), np.random.rand(2, 3)]
    tu.check_numeric_gradient(X * Y, location)
    tu.check_numeric_gradient(X * Y, {"x": location[0], "y": location[1]}, grad_nodes=["x"])
    tu.check_numeric_gradient(X * Y, location, grad_nodes={"x": "add", "y": "null"},
                              dtype=np.float64)
    bn = mx.sym.BatchNorm(X, name="bn", fix_gamma=False)
    tu.check_numeric_gradient(bn, [np.random.rand(4, 3), np.ones(3), np.zeros(3)],
                              aux_states=[np.zeros(3), np.ones(3)], numeric_eps=1e-2,
                              rtol=0.05, atol=1e-3)
    with pytest.raises(ValueError, match="do not match"):
        tu.check_numeric_gradient(X * Y, {"x": location[0]})


def test_numeric_grad_is_a_central_difference():
    exe = (X * X).simple_bind(mx.cpu(), x=(3,), grad_req="null", type_dict={"x": np.float64})
    grads = tu.numeric_grad(exe, {"x": np.array([1.0, 2.0, 3.0])}, eps=1e-3, dtype=np.float64)
    assert np.allclose(grads["x"], [2.0, 4.0, 6.0])
    assert exe.arg_dict["x"].asnumpy().tolist() == [1.0, 2.0, 3.0]  # restored


def test_check_symbolic_forward():
    a, b = np.random.rand(2, 2), np.random.rand(2, 2)
    sym = X * Y
    out = tu.check_symbolic_forward(sym, [a, b], [a * b])
    assert isinstance(out[0], mx.nd.NDArray)
    tu.check_symbolic_forward(sym, {"x": a, "y": b}, {sym.list_outputs()[0]: a * b},
                              dtype="asnumpy")
    name = sym.list_outputs()[0]
    msg = _raises_message(tu.check_symbolic_forward, sym, [a, b], [a * b + 1])
    assert f"EXPECTED_{name}=" in msg and f"FORWARD_{name}=" in msg


@pytest.mark.parametrize("req", ["write", "add", "null"])
def test_check_symbolic_backward(req):
    a, b, g = np.random.rand(2, 2), np.random.rand(2, 2), np.random.rand(2, 2)
    grads = tu.check_symbolic_backward(X * Y, [a, b], [g], [g * b, g * a], grad_req=req)
    assert set(grads) == {"x", "y"} and isinstance(grads["x"], mx.nd.NDArray)
    if req == "write":
        assert np.allclose(grads["x"].asnumpy(), g * b, atol=1e-6)
        _raises_message(tu.check_symbolic_backward, X * Y, [a, b], [g], [g * a, g * a])


def test_check_symbolic_backward_partial_expectations():
    a, b, g = np.random.rand(2, 2), np.random.rand(2, 2), np.random.rand(2, 2)
    tu.check_symbolic_backward(X * Y, {"x": a, "y": b}, [g], {"x": g * b},
                               grad_req={"x": "write", "y": "null"})
    grads = tu.check_symbolic_backward(X * Y, [a, b], [g], [g * b, g * a],
                                       grad_stypes={"x": "row_sparse"})
    assert grads["x"].stype == "row_sparse"


def test_check_consistency_across_dtypes():
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    specs = [{"ctx": mx.cpu(0), "data": (2, 5), "type_dict": {"data": t}}
             for t in (np.float32, np.float64, np.float16)]
    gt = tu.check_consistency(fc, specs)
    assert sorted(gt) == ["data", "fc_bias", "fc_output", "fc_weight"]
    assert gt["fc_output"].dtype == np.float64  # the most precise is the reference
    assert sorted(tu.check_consistency([fc, fc], specs[:2], grad_req="null")) == ["fc_output"]
    tu.check_consistency(fc, specs[:2], grad_req="add", use_uniform=True)
    wrong = {"fc_output": mx.nd.ones((2, 4))}
    with pytest.raises(AssertionError):
        tu.check_consistency(fc, specs[:2], grad_req="null", ground_truth=wrong)
    tu.check_consistency(fc, specs[:2], grad_req="null", ground_truth=wrong, raise_on_err=False)


def test_simple_forward_check_speed_and_structure():
    a, b = np.ones((2, 2)), np.full((2, 2), 3.0)
    assert tu.simple_forward(X * Y, x=a, y=b).tolist() == [[3, 3], [3, 3]]
    assert len(tu.simple_forward(mx.sym.Group([X * Y, X + Y]), x=a, y=b)) == 2
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    assert tu.check_speed(fc, data=(2, 5), N=2) > 0
    location = {"data": np.ones((2, 5)), "fc_weight": np.ones((4, 5)), "fc_bias": np.ones(4)}
    assert tu.check_speed(fc, location=location, typ="forward", N=2) > 0
    with pytest.raises(ValueError):
        tu.check_speed(fc, data=(2, 5), typ="backward")
    assert tu.same_symbol_structure(X * Y, Y * X) and not tu.same_symbol_structure(X * Y, X + Y)


# --- optimizers and Gluon ------------------------------------------------------------------

def test_compare_optimizer():
    sgd = dict(learning_rate=0.1, momentum=0.9)
    tu.compare_optimizer(mx.optimizer.SGD(**sgd), mx.optimizer.SGD(**sgd), (3, 4), np.float32)
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.1),
                         [(3, 4), (2,)], np.float32, ntensors=2)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                             mx.optimizer.SGD(learning_rate=0.2), (3,), np.float32)
    tu.compare_optimizer(mx.optimizer.SGD(**sgd), mx.optimizer.SGD(**sgd), (5, 3), np.float32,
                         w_stype="row_sparse", g_stype="row_sparse")
    tu.compare_ndarray_tuple((mx.nd.ones(2), None), (np.ones(2), mx.nd.zeros(1)))
    tu.compare_ndarray_tuple(None, mx.nd.ones(1))


def test_check_gluon_hybridize_consistency():
    from symgraph.gluon import nn

    def dense(prefix):  # random init: passes only if every variant shares the first's weights
        net = nn.HybridSequential(prefix=prefix)
        with net.name_scope():
            net.add(nn.Dense(4, activation="tanh"), nn.Dense(2))
        return net
    x = mx.nd.array(np.random.rand(3, 5))
    tu.check_gluon_hybridize_consistency(dense, [x])
    tu.check_gluon_hybridize_consistency(lambda prefix: nn.Activation("relu", prefix=prefix),
                                         [x - 0.5], numpy_func=lambda v: np.maximum(v, 0))
    with pytest.raises(AssertionError):
        tu.check_gluon_hybridize_consistency(lambda prefix: nn.Activation("relu", prefix=prefix),
                                             [x], numpy_func=lambda v: v + 1)


# --- data ----------------------------------------------------------------------------------

def test_missing_data_raises_instead_of_downloading(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for call in (tu.get_mnist_ubyte, tu.get_mnist, tu.get_cifar10, tu.get_mnist_pkl,
                 lambda: tu.get_mnist_iterator(10, (784,)),
                 lambda: tu.download("http://data.mxnet.io/x.zip", dirname="data"),
                 lambda: tu.get_zip_data("data", "http://host/a.zip", "a.zip"),
                 lambda: tu.get_bz2_data("data", "a", "http://host/a.bz2", "a.bz2"),
                 lambda: tu.download_model("imagenet1k-resnet-18")):
        with pytest.raises(MXNetError, match="downloads are disabled"):
            call()
    assert os.path.isdir("data")  # MXNet's helpers create it
    assert tu.get_im2rec_path().endswith(os.path.join("symgraph", "tools", "im2rec.py"))
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))  # a home without tools/im2rec.py
    with pytest.raises(OSError, match="im2rec"):
        tu.get_im2rec_path()


def test_download_returns_existing_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs("data")
    open("data/a.zip", "w").close()
    assert tu.download("http://host/a.zip", dirname="data") == os.path.join("data", "a.zip")
    with pytest.raises(MXNetError):
        tu.download("http://host/a.zip", dirname="data", overwrite=True)
    for suffix in ("-symbol.json", "-0000.params"):
        open(f"net{suffix}", "w").close()
    assert tu.download_model("net", dst_dir=".") == (os.path.join(".", "net"), 0)
    assert tu.download_model("other", meta_info={"net": {}}) == (None, 0)


def test_get_mnist_reads_ubyte_files(mnist_dir):
    tu.get_mnist_ubyte()
    data = tu.get_mnist()
    assert data["train_data"].shape == (70, 1, 28, 28) and data["train_data"].dtype == np.float32
    assert 0 <= data["train_data"].min() and data["train_data"].max() <= 1
    assert data["test_label"].shape == (40,) and data["test_label"].dtype == np.int8
    raw = np.frombuffer(open("data/t10k-labels-idx1-ubyte", "rb").read()[8:], np.uint8)
    assert data["test_label"].tolist() == raw.tolist()


def test_get_mnist_iterator_batches(mnist_dir):
    train, val = tu.get_mnist_iterator(16, (1, 28, 28))
    batch = next(train)
    assert batch.data[0].shape == (16, 1, 28, 28) and batch.label[0].shape == (16,)
    assert [d.name for d in train.provide_data] == ["data"]
    assert [d.name for d in train.provide_label] == ["softmax_label"]
    assert len(list(val)) == 2  # 40 images: the incomplete last batch is dropped
    flat, _ = tu.get_mnist_iterator(16, (784,), num_parts=2, part_index=1)
    assert next(flat).data[0].shape == (16, 784)
    dummy = tu.DummyIter(flat)
    assert next(dummy) is next(dummy) and dummy.batch_size == 16
    assert dummy.provide_data == flat.provide_data


# --- statistical checks --------------------------------------------------------------------

def test_buckets_and_moment_checks():
    assert tu.gen_buckets_probs_with_ppf(lambda p: p * 2, 4) == \
        ([(0.0, 0.5), (0.5, 1.0), (1.0, 1.5), (1.5, 2.0)], [0.25] * 4)
    assert tu.mean_check(lambda n: np.random.normal(0, 1, n), 0, 1)
    assert not tu.mean_check(lambda n: np.random.normal(0.1, 1, n), 0, 1)
    assert tu.var_check(lambda n: np.random.normal(0, 2, n), 2)
    assert not tu.var_check(lambda n: np.random.normal(0, 3, n), 2)


def test_chi_square_check_continuous_and_discrete():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: ss.norm.ppf(p, 0, 1), 5)
    p, observed, expected = tu.chi_square_check(lambda n: np.random.normal(0, 1, n), buckets,
                                                probs, nsamples=100000)
    assert p > 0.001 and observed.sum() == 100000 and expected.tolist() == [20000] * 5
    # expected counts truncate to 33333 each (sum 99999): still a valid test
    p, _, expected = tu.chi_square_check(lambda n: np.random.randint(0, 3, n), [0, 1, 2],
                                         [1 / 3] * 3, nsamples=100000)
    assert p > 0.001 and expected.sum() == 99999
    with pytest.raises(AssertionError):
        tu.chi_square_check(lambda n: np.zeros(n), [(1.0, 0.0)], [1.0], nsamples=10)


def test_verify_generator():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: ss.uniform.ppf(p, 0, 1), 5)
    p_values = tu.verify_generator(lambda n: mx.nd.random.uniform(shape=(n,)).asnumpy(),
                                   buckets, probs, nsamples=50000, nrepeat=3)
    assert len(p_values) == 3
    with pytest.raises(AssertionError, match="Generator test fails, Chi-square p="):
        tu.verify_generator(lambda n: np.random.uniform(0, 0.9, n), buckets, probs,
                            nsamples=50000, nrepeat=3)
