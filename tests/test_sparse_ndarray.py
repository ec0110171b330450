"""The sparse NDArray surface (ndarray/sparse.py, ndarray/sparse_array.py, the stype paths of
ndarray/utils.py and ndarray/op.py), ``_contrib_getnnz`` (ops/sparse_nnz.py) and the sparse
helpers of ``mx.test_utils`` (test_utils_sparse.py). Values are checked against numpy and
scipy; storage types of results against MXNet 1.9.1 (recorded from the oracle)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as spsp

import symgraph as mx
from symgraph import config
from symgraph import test_utils as tu
from symgraph.base import MXNetError, NotSupportedForSparseNDArray, StorageFallbackError
from symgraph.sparse.formats import SparseFormatError

DENSE = np.array([[0, 1, 0, 2], [0, 0, 0, 0], [3, 0, 4, 0]], dtype=np.float32)


def _coo():
    rows, cols = DENSE.nonzero()
    return DENSE[rows, cols], (rows, cols)


# ------------------------------------------------------------------ constructors

CSR_SOURCES = {
    "list": (lambda: DENSE.tolist(), np.float32),
    "numpy_f64": (lambda: DENSE.astype(np.float64), np.float64),
    "ndarray": (lambda: mx.nd.array(DENSE), np.float32),
    "scipy_csr": (lambda: spsp.csr_matrix(DENSE.astype(np.float64)), np.float64),
    "scipy_coo": (lambda: spsp.coo_matrix(DENSE), np.float32),
    "definition": (lambda: (DENSE[DENSE != 0], DENSE.nonzero()[1], [0, 2, 2, 4]), np.float32),
    "coo_tuple": (_coo, np.float32),
    "csrndarray": (lambda: mx.nd.array(DENSE).tostype("csr"), np.float32),
}


@pytest.mark.parametrize("name", sorted(CSR_SOURCES))
def test_csr_matrix_from_every_input_form(name):
    make, dtype = CSR_SOURCES[name]
    a = mx.nd.sparse.csr_matrix(make(), shape=DENSE.shape)
    assert a.stype == "csr" and a.shape == DENSE.shape and a.dtype == dtype
    np.testing.assert_array_equal(a.asnumpy(), DENSE)
    want = spsp.csr_matrix(DENSE)
    assert a.indptr.asnumpy().tolist() == want.indptr.tolist()
    assert a.indices.asnumpy().tolist() == want.indices.tolist()
    assert a.indices.dtype == np.int64 and a.indptr.dtype == np.int64
    np.testing.assert_array_equal(a.asscipy().toarray(), DENSE)


RSP_DENSE = np.array([[0, 0], [1, 2], [0, 0], [3, 0]], dtype=np.float32)
RSP_SOURCES = {
    "list": (lambda: RSP_DENSE.tolist(), np.float32),
    "numpy_f16": (lambda: RSP_DENSE.astype(np.float16), np.float16),
    "ndarray": (lambda: mx.nd.array(RSP_DENSE), np.float32),
    "definition": (lambda: ([[1, 2], [3, 0]], [1, 3]), np.float32),
    "rspndarray": (lambda: mx.nd.array(RSP_DENSE).tostype("row_sparse"), np.float32),
}


@pytest.mark.parametrize("name", sorted(RSP_SOURCES))
def test_row_sparse_array_from_every_input_form(name):
    make, dtype = RSP_SOURCES[name]
    a = mx.nd.sparse.row_sparse_array(make(), shape=RSP_DENSE.shape)
    assert a.stype == "row_sparse" and a.shape == RSP_DENSE.shape and a.dtype == dtype
    np.testing.assert_array_equal(a.asnumpy(), RSP_DENSE)
    assert a.indices.asnumpy().tolist() == [1, 3] and a.indices.dtype == np.int64


@pytest.mark.parametrize("stype,maker", [("csr", mx.nd.sparse.csr_matrix),
                                         ("row_sparse", mx.nd.sparse.row_sparse_array)])
def test_constructors_from_a_shape_and_by_stype(stype, maker):
    a = maker((4, 3), dtype="float64")
    assert a.stype == stype and a.shape == (4, 3) and a.dtype == np.float64
    assert not a.asnumpy().any() and a.data.shape[0] == 0
    for made in (mx.nd.zeros((4, 3), None, "float64", stype),  # MXNet's positional stype
                 mx.nd.empty((4, 3), dtype="float64", stype=stype),
                 mx.nd.sparse.zeros(stype, (4, 3), dtype="float64")):
        assert (made.stype, made.shape, made.dtype) == (stype, (4, 3), np.float64)
        assert not made.asnumpy().any()
    copy = mx.nd.array(maker(mx.nd.ones((4, 3)).tostype(stype)))  # nd.array keeps sparse
    assert copy.stype == stype and copy.asnumpy().sum() == 12


@pytest.mark.parametrize("call,error", [
    (lambda: mx.nd.sparse.csr_matrix(mx.nd.ones((2, 2)), shape=(3, 2)), ValueError),
    (lambda: mx.nd.sparse.csr_matrix((2, 2), shape=(3, 2)), ValueError),
    (lambda: mx.nd.sparse.row_sparse_array((2, 2), shape=(3, 2)), ValueError),
    (lambda: mx.nd.sparse.zeros("dense", (2, 2)), ValueError),
    (lambda: mx.nd.sparse.csr_matrix(np.ones(3)), Exception),
    (lambda: mx.nd.sparse.array(np.ones((2, 2))), ValueError),
    (lambda: mx.nd.sparse.csr_matrix(([1.], [0], [0, 1]), shape=(3, 2)), SparseFormatError),
    (lambda: mx.nd.sparse.row_sparse_array(([[1.], [2.]], [0]), shape=(3, 1)),
     SparseFormatError),
])
def test_constructor_errors(call, error):  # source: MXNet test_sparse_nd_exception
    with pytest.raises(error):
        call()


# ------------------------------------------------------------------ check_format

INVALID = [  # (maker, message); source: MXNet test_sparse_nd_check_format
    (lambda: mx.nd.sparse.csr_matrix(([7, 8, 9], [0, 2, 1], [0, 5, 2, 3]), shape=(3, 4)),
     "indptr must start at 0, not decrease"),
    (lambda: mx.nd.sparse.csr_matrix(([7, 8, 9], [2, 1, 1], [0, 2, 2, 3]), shape=(3, 4)),
     "not ascending and unique"),
    (lambda: mx.nd.sparse.csr_matrix(([7, 8, 9], [1, 2, 1], [0, 2, 2, 4]), shape=(3, 4)),
     "end at nnz 3"),
    (lambda: mx.nd.sparse.csr_matrix(([7, 8, 9], [0, 2, 1], [0, -2, 2, 3]), shape=(3, 4)),
     "indptr must start at 0"),
    (lambda: mx.nd.sparse.csr_matrix(([7, 8, 9], [0, 9, 1], [0, 2, 2, 3]), shape=(3, 4)),
     r"column indices out of range \[0, 4\)"),
    (lambda: mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 4]), shape=(3, 2)),
     r"indices out of range \[0, 3\): \[1, 4\]"),
    (lambda: mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 0]), shape=(3, 2)),
     "not sorted ascending and unique"),
    (lambda: mx.nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, -2]), shape=(3, 2)),
     "out of range"),
]


@pytest.mark.parametrize("maker,message", INVALID)
def test_check_format_names_what_is_wrong(maker, message):
    a = maker()  # as in MXNet, construction does not inspect every index
    a.check_format(full_check=False)
    with pytest.raises(SparseFormatError, match=message) as info:
        a.check_format()
    assert isinstance(info.value, MXNetError)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_valid_arrays_pass_check_format(stype):
    np.random.seed(3)
    arr, _ = tu.rand_sparse_ndarray((6, 5), stype, density=0.4)
    arr.check_format()
    mx.nd.sparse.zeros(stype, (6, 5)).check_format()


# ------------------------------------------------------------------ copies between stypes

STYPES = ["default", "row_sparse", "csr"]


def _filled(stype, value):
    return mx.nd.array(value).tostype(stype)


@pytest.mark.parametrize("src", STYPES)
@pytest.mark.parametrize("dst", STYPES)
def test_copyto_and_setitem_between_stypes(src, dst):
    if {src, dst} == {"row_sparse", "csr"}:
        with pytest.raises((TypeError, ValueError)):
            _filled(src, DENSE).copyto(mx.nd.zeros(DENSE.shape, stype=dst))
        return
    target = mx.nd.zeros(DENSE.shape, stype=dst, dtype="float64")
    out = _filled(src, DENSE).copyto(target)
    assert out is target and target.stype == dst and target.dtype == np.float64
    np.testing.assert_array_equal(target.asnumpy(), DENSE)
    target2 = mx.nd.zeros(DENSE.shape, stype=dst)
    target2[:] = _filled(src, 2 * DENSE)
    np.testing.assert_array_equal(target2.asnumpy(), 2 * DENSE)
    assert target2.stype == dst


def test_setitem_from_numpy_and_scalars():  # source: MXNet test_sparse_nd_setitem
    rsp = mx.nd.zeros((3, 2), stype="row_sparse")
    with pytest.warns(RuntimeWarning, match="not efficient"):
        rsp[:] = RSP_DENSE[:3]
    np.testing.assert_array_equal(rsp.asnumpy(), RSP_DENSE[:3])
    rsp[:] = 5
    assert rsp.asnumpy().tolist() == [[5, 5]] * 3 and rsp.stype == "row_sparse"
    csr = mx.nd.zeros((3, 4), stype="csr")
    with pytest.raises(ValueError, match="numeric types"):
        csr[:] = 1
    with pytest.raises(TypeError):
        csr[1:2] = mx.nd.ones((1, 4))


def test_copyto_context_and_copy_are_deep():
    a = _filled("row_sparse", RSP_DENSE)
    for b in (a.copy(), a.copyto(mx.cpu()), a.as_in_context(mx.cpu(1))):
        assert b is not a and b.stype == "row_sparse"
        b[:] = 0
        np.testing.assert_array_equal(a.asnumpy(), RSP_DENSE)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_astype_and_tostype(stype):
    a = _filled(stype, DENSE)
    b = a.astype("float64")
    assert b.stype == stype and b.dtype == np.float64 and b is not a
    np.testing.assert_array_equal(b.asnumpy(), DENSE)
    assert a.astype("float32", copy=False) is a
    assert a.astype("float32", copy=True) is not a
    dense = a.tostype("default")
    assert dense.stype == "default" and not dense._is_sparse
    assert a.tostype(stype).stype == stype
    other = "csr" if stype == "row_sparse" else "row_sparse"
    with pytest.raises(ValueError, match=f"cast_storage from {stype} to {other}"):
        a.tostype(other)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_inplace_arithmetic_keeps_the_storage(stype):  # MXNet: (x op y).copyto(x)
    a = _filled(stype, DENSE)
    a += _filled(stype, DENSE)
    a *= 2
    a -= mx.nd.array(DENSE)
    assert a.stype == stype
    np.testing.assert_array_equal(a.asnumpy(), 3 * DENSE)


def test_refused_methods():
    a = _filled("csr", DENSE)
    with pytest.raises(NotSupportedForSparseNDArray):
        a.reshape((4, 3))
    with pytest.raises(NotImplementedError):
        _ = a.size
    with pytest.raises(ValueError, match="Multi-dimension"):
        _ = a[0, 1]


# ------------------------------------------------------------------ operators' storage

# (expression, storage type MXNet 1.9.1 gives for row_sparse x, for csr x)
RESULT_STYPES = [
    (lambda x: x.sqrt(), "row_sparse", "csr"),
    (lambda x: mx.nd.abs(x), "row_sparse", "csr"),
    (lambda x: x.clip(-0.5, 0.5), "row_sparse", "csr"),
    (lambda x: -x, "row_sparse", "csr"),
    (lambda x: x * 2, "row_sparse", "csr"),
    (lambda x: 1 == x, "row_sparse", "csr"),
    (lambda x: 0 == x, "default", "default"),
    (lambda x: mx.nd.add(x, x), "default", "default"),
    (lambda x: x + x, "row_sparse", "csr"),
    (lambda x: mx.nd.dot(x, mx.nd.ones((4, 2))), "default", "default"),
    (lambda x: mx.nd.concat(x, x, dim=0), "default", "csr"),
    (lambda x: mx.nd.zeros_like(x), "row_sparse", "csr"),
]


@pytest.mark.parametrize("expr,rsp_stype,csr_stype", RESULT_STYPES)
def test_result_storage_types_follow_the_operators(expr, rsp_stype, csr_stype):
    for stype, want in (("row_sparse", rsp_stype), ("csr", csr_stype)):
        x = _filled(stype, DENSE)
        got = expr(x)
        assert got.stype == want, (stype, got.stype)
        np.testing.assert_allclose(got.asnumpy(), expr(mx.nd.array(DENSE)).asnumpy())


@pytest.mark.parametrize("axis", [None, 1])
def test_getnnz_matches_scipy(axis):
    m = spsp.random(7, 5, density=0.3, format="csr", random_state=4, dtype=np.float32)
    got = mx.nd.contrib.getnnz(mx.nd.sparse.csr_matrix(m), axis=axis)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.asnumpy(), np.atleast_1d(m.getnnz(axis=axis)))
    with pytest.raises(MXNetError, match="axis = 0"):
        mx.nd.contrib.getnnz(mx.nd.sparse.csr_matrix(m), axis=0)


# ------------------------------------------------------------------ pickle, save and load

@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_pickle_round_trip(stype):
    a = _filled(stype, DENSE).astype("float64")
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is type(a) and b.dtype == np.float64
    np.testing.assert_array_equal(b.asnumpy(), DENSE)
    assert b.indices.asnumpy().tolist() == a.indices.asnumpy().tolist()


def test_save_load_round_trip_mixed_storage(tmp_path):
    arrays = {"rsp": _filled("row_sparse", RSP_DENSE), "csr": _filled("csr", DENSE),
              "dense": mx.nd.array(DENSE), "empty": mx.nd.sparse.zeros("csr", (2, 3))}
    path = str(tmp_path / "arrays.params")
    mx.nd.save(path, arrays)
    back = mx.nd.load(path)
    for name, arr in arrays.items():
        assert back[name].stype == arr.stype
        np.testing.assert_array_equal(back[name].asnumpy(), arr.asnumpy())
    mx.nd.save(path, list(arrays.values()))
    assert [a.stype for a in mx.nd.load(path)] == [a.stype for a in arrays.values()]


# ------------------------------------------------------------------ the fallback limit

def test_dense_use_beyond_the_fallback_limit_raises():
    previous = config.set(sparse_fallback_limit=1000)
    try:
        big = mx.nd.sparse.zeros("row_sparse", (500, 10))
        with pytest.raises(StorageFallbackError, match=r"\(500, 10\)"):
            _ = big._t  # dense code never gets a silent 5000-element copy
        with pytest.raises(StorageFallbackError, match="5000 elements"):
            mx.nd.stack(big, big)  # no sparse kernel for stack
        with pytest.raises(StorageFallbackError):
            mx.nd.zeros((500, 10))[:] = big  # nor for writing into a dense array
        small = mx.nd.sparse.zeros("row_sparse", (10, 10))
        assert mx.nd.stack(small, small).shape == (2, 10, 10)  # fallback under the limit
    finally:
        config.set(sparse_fallback_limit=previous.sparse_fallback_limit)


def test_sparse_kernels_and_explicit_casts_never_densify():
    previous = config.set(sparse_fallback_limit=1000)
    try:
        big = mx.nd.sparse.zeros("row_sparse", (500, 10))
        assert (big * 2).stype == "row_sparse"
        assert big.tostype("default").shape == (500, 10)  # an explicit cast is allowed
    finally:
        config.set(sparse_fallback_limit=previous.sparse_fallback_limit)


# ------------------------------------------------------------------ mx.test_utils helpers

def test_rand_sparse_ndarray_row_sparse_options():
    np.random.seed(5)
    arr, (values, rows) = tu.rand_sparse_ndarray((8, 3), "row_sparse", density=0.5)
    assert arr.indices.asnumpy().tolist() == rows.tolist()
    np.testing.assert_allclose(arr.asnumpy()[rows], values)
    arr, (values, rows) = tu.rand_sparse_ndarray(
        (8, 3), "row_sparse", rsp_indices=np.array([1, 6]), data_init=2.0,
        modifier_func=lambda v: v + 1)
    assert rows.tolist() == [1, 6] and (values == 3).all()
    empty, (values, rows) = tu.rand_sparse_ndarray((8, 3), "row_sparse", density=0.0)
    assert empty.stype == "row_sparse" and values.size == 0 and rows.size == 0
    zd = tu.create_sparse_array_zd((8, 3), "row_sparse", density=0.9)
    assert zd.indices.shape == (0,)
    assert tu.create_sparse_array((8, 3), "row_sparse",
                                  rsp_indices=[5, 2]).indices.asnumpy().tolist() == [2, 5]


def test_rand_sparse_ndarray_csr_distributions():
    np.random.seed(6)
    csr, (indptr, indices, data) = tu.rand_sparse_ndarray((5, 16), "csr", density=0.5,
                                                          distribution="powerlaw")
    assert np.diff(indptr.asnumpy()).tolist() == [2, 4, 8, 16, 10]
    csr, (indptr, indices, data) = tu.rand_sparse_ndarray((20, 30), "csr", density=0.25,
                                                          data_init=7)
    assert csr.stype == "csr" and indptr.asnumpy()[-1] == 150 and (data.asnumpy() == 7).all()
    csr.check_format()
    with pytest.raises(ValueError, match="density"):
        tu.rand_sparse_ndarray((4, 4), "csr", density=0.1, distribution="powerlaw")
    assert tu.rand_ndarray((3, 4), "csr", density=1.0).asnumpy().all()


def test_shuffle_csr_column_indices_keeps_each_row():
    np.random.seed(7)
    m = spsp.random(6, 9, density=0.5, format="csr", random_state=7)
    before = [sorted(m.indices[m.indptr[i]:m.indptr[i + 1]]) for i in range(6)]
    tu.shuffle_csr_column_indices(m)
    after = [sorted(m.indices[m.indptr[i]:m.indptr[i + 1]]) for i in range(6)]
    assert before == after


def test_check_numeric_gradient_with_sparse_location_and_grad_stype():
    np.random.seed(8)
    x = tu.rand_ndarray((4, 5), "csr", density=0.5)
    w = mx.sym.var("w")
    out = mx.sym.sparse.dot(mx.sym.var("x", stype="csr"), w, transpose_a=True)
    tu.check_numeric_gradient(out, {"x": x, "w": np.random.rand(4, 3)}, grad_nodes=["w"],
                              rtol=1e-2, atol=1e-3)
    rsp = tu.rand_ndarray((6, 2), "row_sparse", density=0.5)
    y = mx.sym.var("y", stype="row_sparse")
    tu.check_numeric_gradient(mx.sym.sparse.retain(y, mx.sym.var("idx")),
                              [rsp, np.array([0, 3, 5], np.float32)], grad_nodes=["y"],
                              grad_stype_dict={"y": "row_sparse"}, rtol=1e-2, atol=1e-3)


def test_check_symbolic_backward_gives_sparse_gradient_arrays():
    np.random.seed(9)
    x = tu.rand_ndarray((4, 5), "csr", density=0.5)
    w = np.random.rand(5, 3).astype(np.float32)
    sym = mx.sym.sparse.dot(mx.sym.var("x", stype="csr"), mx.sym.var("w"))
    head = np.random.rand(4, 3).astype(np.float32)
    want = x.asnumpy().T @ head
    grads = tu.check_symbolic_backward(sym, {"x": x, "w": w}, [head], {"w": want},
                                       grad_req={"x": "null", "w": "write"},
                                       grad_stypes={"w": "row_sparse"}, rtol=1e-4, atol=1e-5)
    assert grads["w"].stype == "row_sparse"
    out = tu.check_symbolic_forward(sym, {"x": x, "w": w}, [x.asnumpy() @ w])
    assert out[0].stype == "default"
