"""Elementwise operators on sparse storage (symgraph/sparse/rules.py and the op rows using it).

Every case runs an op on fixed row_sparse / csr / dense inputs and checks, against MXNet 1.9.1:

- the output's storage type: ``EXPECTED`` below was recorded from MXNet 1.9.1 (CPU build,
  ``/work/mxvenv``) by running this file's own :func:`run_case` with ``mxnet`` in place of
  ``symgraph`` (``python tests/test_sparse_elemwise.py --record``, MXNet's imperative call
  and bound symbol giving the same stypes);
- the values: equal to numpy on the dense forms of the inputs;
- the storage stays sparse: a sparse output stores no more rows (row_sparse) or entries (csr)
  than its sparse inputs together;
- a bound symbol (``mx.sym.var(..., stype=...)`` + ``bind``) gives the same stype and values.

Storage rules ported from MXNet's src/operator/tensor/elemwise_*_op*.cc behaviour; the
comparison cases follow tests/python/unittest/test_sparse_ndarray.py (test_sparse_nd_equal ...).
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

STYPES = ("default", "row_sparse", "csr")
_RNG = np.random.RandomState(7)


def _matrix(rows_zero: tuple, scale: float = 0.9) -> np.ndarray:
    """A 6x4 float32 matrix with values in (-scale, scale), whole zero rows ``rows_zero``
    and a few zero entries (so both formats store fewer values than the dense array)."""
    m = _RNG.uniform(-scale, scale, size=(6, 4)).astype(np.float32)
    m[np.abs(m) < 0.15] = 0.5
    m[list(rows_zero)] = 0
    m[0, 1] = m[3, 2] = 0
    return m


A = _matrix((1, 4))
B = _matrix((2, 4, 5))
POS = np.abs(A)  # log, sqrt ... of the stored values stay finite

UNARY = {
    "abs": np.abs, "sign": np.sign, "negative": np.negative, "relu": lambda x: np.maximum(x, 0),
    "square": np.square, "sqrt": np.sqrt, "rint": np.rint, "fix": np.fix,
    "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),  # MXNet: halves away from 0
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "sin": np.sin, "tan": np.tan,
    "arcsin": np.arcsin, "arctan": np.arctan, "sinh": np.sinh, "tanh": np.tanh,
    "arcsinh": np.arcsinh, "arctanh": np.arctanh, "expm1": np.expm1, "log1p": np.log1p,
    "degrees": np.degrees, "radians": np.radians, "cbrt": np.cbrt,
    "exp": np.exp, "cos": np.cos, "log": np.log, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "rsqrt": lambda x: 1 / np.sqrt(x), "reciprocal": lambda x: 1 / x,
    "zeros_like": np.zeros_like, "ones_like": np.ones_like, "BlockGrad": lambda x: x,
    "stop_gradient": lambda x: x, "identity": lambda x: x,
}
SCALAR = ["x * 2.5", "x / 2", "x + 1", "x + 0", "x - 1", "x - 0", "2 * x", "1 - x", "x ** 2",
          "-x", "x == 0", "x == 1", "x != 0", "x != 1", "x > 0", "x > -1", "x >= 0", "x >= 1",
          "x < 0", "x < 1", "x <= 0", "x <= -1", "0 > x", "1 <= x"]
BINARY = {
    "elemwise_add": np.add, "elemwise_sub": np.subtract, "elemwise_mul": np.multiply,
    "elemwise_div": np.divide, "_maximum": np.maximum, "_minimum": np.minimum,
    "_hypot": np.hypot, "_grad_add": np.add, "_equal": lambda a, b: (a == b) * 1.0,
}
ROW, COL = np.array([0.5, 2.0, -1.0, 4.0], np.float32), np.arange(1, 7, dtype=np.float32)[:, None]
BROADCAST = {  # csr lhs (A) with a dense rhs
    "broadcast_mul-row": ("broadcast_mul", ROW, np.multiply),
    "broadcast_mul-col": ("broadcast_mul", COL, np.multiply),
    "broadcast_mul-scalar": ("broadcast_mul", np.array([[3.0]], np.float32), np.multiply),
    "broadcast_div-row": ("broadcast_div", ROW, np.divide),
    "broadcast_div-col": ("broadcast_div", COL, np.divide),
    "broadcast_div-scalar1d": ("broadcast_div", np.array([2.0], np.float32), np.divide),
    "broadcast_add-col": ("broadcast_add", COL, np.add),
    "broadcast_sub-row": ("broadcast_sub", ROW, np.subtract),
}


# ------------------------------------------------------------------ cases (module-agnostic)

def _arr(mx, m: np.ndarray, stype: str):
    return mx.nd.array(m).tostype(stype)


def _np(call, *xs):
    with np.errstate(all="ignore"):
        return np.asarray(call(*xs), dtype=np.float32)


def _unary(mx, name, stype):
    x = POS if name in ("sqrt", "log", "rsqrt", "reciprocal") else A
    fn = getattr(mx.nd.sparse, name, None) or getattr(mx.nd, name)
    return fn(_arr(mx, x, stype)), [x], UNARY[name]


def _scalar(mx, expr, stype):
    return eval(expr, {"x": _arr(mx, A, stype)}), [A], lambda a: eval(expr, {"x": a})


def _binary(mx, name, stypes):
    fn = getattr(mx.nd, name, None) or getattr(mx.nd._internal, name)
    return fn(_arr(mx, A, stypes[0]), _arr(mx, B, stypes[1])), [A, B], BINARY[name]


def _broadcast(mx, key):
    name, rhs, ref = BROADCAST[key]
    out = getattr(mx.nd, name)(_arr(mx, A, "csr"), mx.nd.array(rhs))
    return out, [A, rhs], ref


def _misc(mx, key):
    """add_n, where, clip, quadratic, sparse.add/... (one call each)."""
    nd, sp = mx.nd, mx.nd.sparse
    rsp, csr, dns = (lambda m, s=s: _arr(mx, m, s) for s in ("row_sparse", "csr", "default"))
    table = {
        "add_n-rrr": (lambda: nd.add_n(rsp(A), rsp(B), rsp(A)), [A, B], lambda a, b: a + b + a),
        "add_n-rdr": (lambda: nd.add_n(rsp(A), dns(B), rsp(A)), [A, B], lambda a, b: a + b + a),
        "add_n-cc": (lambda: nd.add_n(csr(A), csr(B)), [A, B], np.add),
        "ElementWiseSum-rr": (lambda: nd.ElementWiseSum(rsp(A), rsp(B)), [A, B], np.add),
        "where-cdd": (lambda: nd.where(csr(A), dns(B), dns(POS)), [A, B, POS], np.where),
        "clip-r": (lambda: sp.clip(rsp(A), -0.3, 0.4), [A], lambda a: np.clip(a, -0.3, 0.4)),
        "clip-c": (lambda: sp.clip(csr(A), 0.0, 0.4), [A], lambda a: np.clip(a, 0, 0.4)),
        "quadratic-c0": (lambda: nd.contrib.quadratic(csr(A), a=2, b=-1, c=0), [A],
                         lambda a: 2 * a * a - a),
        "quadratic-c1": (lambda: nd.contrib.quadratic(csr(A), a=2, b=-1, c=1), [A],
                         lambda a: 2 * a * a - a + 1),
        "quadratic-r0": (lambda: nd.contrib.quadratic(rsp(A), a=2, b=-1, c=0), [A],
                         lambda a: 2 * a * a - a),
        "sparse.add-cc": (lambda: sp.add(csr(A), csr(B)), [A, B], np.add),
        "sparse.subtract-rd": (lambda: sp.subtract(rsp(A), dns(B)), [A, B], np.subtract),
        "sparse.multiply-cd": (lambda: sp.multiply(csr(A), dns(B)), [A, B], np.multiply),
        "sparse.multiply-c-col": (lambda: sp.multiply(csr(A), dns(COL)), [A, COL], np.multiply),
        "sparse.divide-c-row": (lambda: sp.divide(csr(A), dns(ROW[None])), [A, ROW], np.divide),
        "sparse.add-c-col": (lambda: sp.add(csr(A), dns(COL)), [A, COL], np.add),
        "sparse.zeros_like-c": (lambda: sp.zeros_like(csr(A)), [A], np.zeros_like),
    }
    make, ins, ref = table[key]
    return make(), ins, ref


MISC = ["add_n-rrr", "add_n-rdr", "add_n-cc", "ElementWiseSum-rr", "where-cdd", "clip-r",
        "clip-c", "quadratic-c0", "quadratic-c1", "quadratic-r0", "sparse.add-cc",
        "sparse.subtract-rd", "sparse.multiply-cd", "sparse.multiply-c-col",
        "sparse.divide-c-row", "sparse.add-c-col", "sparse.zeros_like-c"]


def all_cases() -> list[tuple]:
    """(case id, builder, argument) of every imperative case."""
    cases = [(f"{n}:{s}", _unary, (n, s)) for n in UNARY for s in ("row_sparse", "csr")]
    cases += [(f"{e}:{s}", _scalar, (e, s)) for e in SCALAR for s in ("row_sparse", "csr")]
    cases += [(f"{n}:{a},{b}", _binary, (n, (a, b))) for n in BINARY for a in STYPES
              for b in STYPES]
    cases += [(k, _broadcast, (k,)) for k in BROADCAST]
    cases += [(k, _misc, (k,)) for k in MISC]
    return cases


def run_case(mx, builder, args):
    """The output array, the dense numpy inputs and the numpy reference of one case."""
    return builder(mx, *args)


# MXNet 1.9.1's output storage type of each case: 'd' default, 'r' row_sparse, 'c' csr.
EXPECTED = {
    '-x:csr': 'c', '-x:row_sparse': 'r', '0 > x:csr': 'c', '0 > x:row_sparse': 'r',
    '1 - x:csr': 'd', '1 - x:row_sparse': 'd', '1 <= x:csr': 'c', '1 <= x:row_sparse': 'r',
    '2 * x:csr': 'c', '2 * x:row_sparse': 'r', 'BlockGrad:csr': 'c', 'BlockGrad:row_sparse': 'r',
    'ElementWiseSum-rr': 'r', '_equal:csr,csr': 'd', '_equal:csr,default': 'd',
    '_equal:csr,row_sparse': 'd', '_equal:default,csr': 'd', '_equal:default,default': 'd',
    '_equal:default,row_sparse': 'd', '_equal:row_sparse,csr': 'd',
    '_equal:row_sparse,default': 'd', '_equal:row_sparse,row_sparse': 'd',
    '_grad_add:csr,csr': 'c', '_grad_add:csr,default': 'd', '_grad_add:csr,row_sparse': 'd',
    '_grad_add:default,csr': 'd', '_grad_add:default,default': 'd',
    '_grad_add:default,row_sparse': 'd', '_grad_add:row_sparse,csr': 'd',
    '_grad_add:row_sparse,default': 'd', '_grad_add:row_sparse,row_sparse': 'r',
    '_hypot:csr,csr': 'c', '_hypot:csr,default': 'd', '_hypot:csr,row_sparse': 'd',
    '_hypot:default,csr': 'd', '_hypot:default,default': 'd', '_hypot:default,row_sparse': 'd',
    '_hypot:row_sparse,csr': 'd', '_hypot:row_sparse,default': 'd',
    '_hypot:row_sparse,row_sparse': 'r', '_maximum:csr,csr': 'c', '_maximum:csr,default': 'd',
    '_maximum:csr,row_sparse': 'd', '_maximum:default,csr': 'd', '_maximum:default,default': 'd',
    '_maximum:default,row_sparse': 'd', '_maximum:row_sparse,csr': 'd',
    '_maximum:row_sparse,default': 'd', '_maximum:row_sparse,row_sparse': 'r',
    '_minimum:csr,csr': 'c', '_minimum:csr,default': 'd', '_minimum:csr,row_sparse': 'd',
    '_minimum:default,csr': 'd', '_minimum:default,default': 'd',
    '_minimum:default,row_sparse': 'd', '_minimum:row_sparse,csr': 'd',
    '_minimum:row_sparse,default': 'd', '_minimum:row_sparse,row_sparse': 'r', 'abs:csr': 'c',
    'abs:row_sparse': 'r', 'add_n-cc': 'd', 'add_n-rdr': 'd', 'add_n-rrr': 'r', 'arcsin:csr': 'c',
    'arcsin:row_sparse': 'r', 'arcsinh:csr': 'c', 'arcsinh:row_sparse': 'r', 'arctan:csr': 'c',
    'arctan:row_sparse': 'r', 'arctanh:csr': 'c', 'arctanh:row_sparse': 'r',
    'broadcast_add-col': 'd', 'broadcast_div-col': 'c', 'broadcast_div-row': 'c',
    'broadcast_div-scalar1d': 'c', 'broadcast_mul-col': 'c', 'broadcast_mul-row': 'c',
    'broadcast_mul-scalar': 'c', 'broadcast_sub-row': 'd', 'cbrt:csr': 'c',
    'cbrt:row_sparse': 'r', 'ceil:csr': 'c', 'ceil:row_sparse': 'r', 'clip-c': 'c', 'clip-r': 'r',
    'cos:csr': 'd', 'cos:row_sparse': 'd', 'degrees:csr': 'c', 'degrees:row_sparse': 'r',
    'elemwise_add:csr,csr': 'c', 'elemwise_add:csr,default': 'd',
    'elemwise_add:csr,row_sparse': 'd', 'elemwise_add:default,csr': 'd',
    'elemwise_add:default,default': 'd', 'elemwise_add:default,row_sparse': 'd',
    'elemwise_add:row_sparse,csr': 'd', 'elemwise_add:row_sparse,default': 'd',
    'elemwise_add:row_sparse,row_sparse': 'r', 'elemwise_div:csr,csr': 'd',
    'elemwise_div:csr,default': 'd', 'elemwise_div:csr,row_sparse': 'd',
    'elemwise_div:default,csr': 'd', 'elemwise_div:default,default': 'd',
    'elemwise_div:default,row_sparse': 'd', 'elemwise_div:row_sparse,csr': 'd',
    'elemwise_div:row_sparse,default': 'd', 'elemwise_div:row_sparse,row_sparse': 'd',
    'elemwise_mul:csr,csr': 'c', 'elemwise_mul:csr,default': 'c',
    'elemwise_mul:csr,row_sparse': 'd', 'elemwise_mul:default,csr': 'c',
    'elemwise_mul:default,default': 'd', 'elemwise_mul:default,row_sparse': 'r',
    'elemwise_mul:row_sparse,csr': 'd', 'elemwise_mul:row_sparse,default': 'r',
    'elemwise_mul:row_sparse,row_sparse': 'r', 'elemwise_sub:csr,csr': 'c',
    'elemwise_sub:csr,default': 'd', 'elemwise_sub:csr,row_sparse': 'd',
    'elemwise_sub:default,csr': 'd', 'elemwise_sub:default,default': 'd',
    'elemwise_sub:default,row_sparse': 'd', 'elemwise_sub:row_sparse,csr': 'd',
    'elemwise_sub:row_sparse,default': 'd', 'elemwise_sub:row_sparse,row_sparse': 'r',
    'exp:csr': 'd', 'exp:row_sparse': 'd', 'expm1:csr': 'c', 'expm1:row_sparse': 'r',
    'fix:csr': 'c', 'fix:row_sparse': 'r', 'floor:csr': 'c', 'floor:row_sparse': 'r',
    'identity:csr': 'c', 'identity:row_sparse': 'r', 'log1p:csr': 'c', 'log1p:row_sparse': 'r',
    'log:csr': 'd', 'log:row_sparse': 'd', 'negative:csr': 'c', 'negative:row_sparse': 'r',
    'ones_like:csr': 'd', 'ones_like:row_sparse': 'd', 'quadratic-c0': 'c', 'quadratic-c1': 'd',
    'quadratic-r0': 'd', 'radians:csr': 'c', 'radians:row_sparse': 'r', 'reciprocal:csr': 'd',
    'reciprocal:row_sparse': 'd', 'relu:csr': 'c', 'relu:row_sparse': 'r', 'rint:csr': 'c',
    'rint:row_sparse': 'r', 'round:csr': 'c', 'round:row_sparse': 'r', 'rsqrt:csr': 'd',
    'rsqrt:row_sparse': 'd', 'sigmoid:csr': 'd', 'sigmoid:row_sparse': 'd', 'sign:csr': 'c',
    'sign:row_sparse': 'r', 'sin:csr': 'c', 'sin:row_sparse': 'r', 'sinh:csr': 'c',
    'sinh:row_sparse': 'r', 'sparse.add-c-col': 'd', 'sparse.add-cc': 'c',
    'sparse.divide-c-row': 'c', 'sparse.multiply-c-col': 'c', 'sparse.multiply-cd': 'c',
    'sparse.subtract-rd': 'd', 'sparse.zeros_like-c': 'c', 'sqrt:csr': 'c',
    'sqrt:row_sparse': 'r', 'square:csr': 'c', 'square:row_sparse': 'r', 'stop_gradient:csr': 'c',
    'stop_gradient:row_sparse': 'r', 'tan:csr': 'c', 'tan:row_sparse': 'r', 'tanh:csr': 'c',
    'tanh:row_sparse': 'r', 'trunc:csr': 'c', 'trunc:row_sparse': 'r', 'where-cdd': 'd',
    'x != 0:csr': 'c', 'x != 0:row_sparse': 'r', 'x != 1:csr': 'd', 'x != 1:row_sparse': 'd',
    'x * 2.5:csr': 'c', 'x * 2.5:row_sparse': 'r', 'x ** 2:csr': 'd', 'x ** 2:row_sparse': 'd',
    'x + 0:csr': 'c', 'x + 0:row_sparse': 'r', 'x + 1:csr': 'd', 'x + 1:row_sparse': 'd',
    'x - 0:csr': 'c', 'x - 0:row_sparse': 'r', 'x - 1:csr': 'd', 'x - 1:row_sparse': 'd',
    'x / 2:csr': 'c', 'x / 2:row_sparse': 'r', 'x < 0:csr': 'c', 'x < 0:row_sparse': 'r',
    'x < 1:csr': 'd', 'x < 1:row_sparse': 'd', 'x <= -1:csr': 'c', 'x <= -1:row_sparse': 'r',
    'x <= 0:csr': 'd', 'x <= 0:row_sparse': 'd', 'x == 0:csr': 'd', 'x == 0:row_sparse': 'd',
    'x == 1:csr': 'c', 'x == 1:row_sparse': 'r', 'x > -1:csr': 'd', 'x > -1:row_sparse': 'd',
    'x > 0:csr': 'c', 'x > 0:row_sparse': 'r', 'x >= 0:csr': 'd', 'x >= 0:row_sparse': 'd',
    'x >= 1:csr': 'c', 'x >= 1:row_sparse': 'r', 'zeros_like:csr': 'c',
    'zeros_like:row_sparse': 'r',
}

# ------------------------------------------------------------------ the tests


def _stored(arr) -> int:
    """Rows (row_sparse) or entries (csr) an array stores."""
    return arr.indices.shape[0] if arr.stype in ("row_sparse", "csr") else -1


def _input_stored(mx, case_args) -> int:
    builder, args = case_args
    if builder is _unary or builder is _scalar:
        return _stored(_arr(mx, A, args[1]))
    if builder is _binary:
        return sum(max(_stored(_arr(mx, m, s)), 0) for m, s in zip((A, B), args[1]))
    return 10 ** 9


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c[0])
def test_imperative_stype_and_values(case):
    import symgraph as mx
    key, builder, args = case
    out, ins, ref = run_case(mx, builder, args)
    assert out.stype == _STYPE[EXPECTED[key]], key
    np.testing.assert_allclose(out.asnumpy(), _np(ref, *ins), rtol=1e-5, atol=1e-6,
                               equal_nan=True)
    if out.stype != "default":  # the storage stays sparse: nothing beyond the inputs' rows
        assert _stored(out) <= _input_stored(mx, (builder, args)), key


_STYPE = {"d": "default", "r": "row_sparse", "c": "csr"}

SYMBOLIC = [(n, (s,)) for n in ("abs", "sqrt", "square", "relu", "exp", "sign", "zeros_like")
            for s in ("row_sparse", "csr")]
SYMBOLIC += [(n, (a, b)) for n in ("elemwise_add", "elemwise_sub", "elemwise_mul")
             for a in STYPES for b in STYPES]


@pytest.mark.parametrize("name,stypes", SYMBOLIC, ids=lambda v: str(v))
def test_bound_symbol_matches_imperative(name, stypes):
    import symgraph as mx
    data = [POS if name == "sqrt" else A, B][:len(stypes)]
    names = ["a", "b"][:len(stypes)]
    vars_ = [mx.sym.var(n, stype=s) for n, s in zip(names, stypes)]
    sym = getattr(mx.sym, name)(*vars_)
    args = {n: _arr(mx, m, s) for n, m, s in zip(names, data, stypes)}
    exe = sym.bind(mx.cpu(), args=args)
    out = exe.forward()[0]
    imperative = getattr(mx.nd, name)(*args.values()) if len(stypes) == 2 else \
        getattr(mx.nd.sparse, name)(*args.values())
    assert out.stype == imperative.stype
    key = f"{name}:{','.join(stypes)}"
    assert out.stype == _STYPE[EXPECTED[key]], key
    np.testing.assert_allclose(out.asnumpy(), imperative.asnumpy(), rtol=1e-6, equal_nan=True)


def test_clip_sparse_outside_zero_is_an_error():
    """MXNet 1.9.1 refuses clip of a sparse array whose range excludes 0 (no fallback)."""
    import symgraph as mx
    from symgraph.base import MXNetError
    with pytest.raises(MXNetError, match="clip"):
        mx.nd.sparse.clip(_arr(mx, A, "csr"), 0.1, 1.0).asnumpy()


def test_broadcast_div_csr_by_same_shape_is_an_error():
    """MXNet 1.9.1: 'Please use elemwise_div for division between csr and dense of the same
    shape'."""
    import symgraph as mx
    from symgraph.base import MXNetError
    with pytest.raises(MXNetError, match="elemwise_div"):
        mx.nd.broadcast_div(_arr(mx, A, "csr"), mx.nd.array(B)).asnumpy()


def _dispatch(name: str, values: list, **attrs):
    """Run op ``name`` on storage values through the storage dispatcher."""
    from symgraph.ops.base import Runtime, get_op
    from symgraph.sparse import dispatch
    from symgraph.symbol.graph import op_params
    op = get_op(name)
    p = op_params(op, {k: str(v) for k, v in attrs.items()}, name)
    return dispatch.run(op, p, values, len(values), Runtime(), name)[0]


def test_kernels_do_not_densify_sparse_operands():
    """dense + row_sparse, row_sparse * dense, csr * dense, add_n and where read only the
    stored part: they run under a fallback limit far below the arrays' dense size."""
    import torch

    from symgraph import config
    from symgraph.sparse import formats, rules
    big = (200000, 8)
    rsp = formats.RowSparse(torch.ones(2, 8), torch.tensor([5, 70000]), big)
    csr = formats.CSR(torch.tensor([2.0, 3.0]), torch.tensor([1, 7]),
                      torch.tensor([0, 1, 2] + [2] * (big[0] - 2)), big)
    dense = torch.ones(big)
    with config.override(sparse_fallback_limit=1000):
        total = _dispatch("elemwise_add", [dense, rsp])
        diff = _dispatch("elemwise_sub", [rsp, dense])
        scaled = _dispatch("elemwise_mul", [rsp, dense * 3])
        picked = _dispatch("elemwise_mul", [dense * 2, csr])
        summed = _dispatch("add_n", [rsp, rsp, rsp], num_args=3)
        mixed = _dispatch("add_n", [dense, rsp, csr], num_args=3)
        # where's OpDef (ops/indexing.py) does not carry rules.WHERE yet: the kernel itself
        chosen = rules.WHERE.forward(None, [csr, dense * 5, dense], [], None)[0]
    assert float(total[70000, 0]) == 2.0 and float(total[0, 0]) == 1.0
    assert float(diff[5, 0]) == 0.0 and float(diff[6, 0]) == -1.0
    assert scaled.indices.tolist() == [5, 70000] and float(scaled.data.sum()) == 48.0
    assert isinstance(picked, formats.CSR) and picked.data.tolist() == [4.0, 6.0]
    assert summed.indices.tolist() == [5, 70000] and float(summed.data.sum()) == 48.0
    assert float(mixed[1, 7]) == 4.0 and float(mixed[5, 0]) == 2.0
    assert float(chosen[0, 1]) == 5.0 and float(chosen[0, 0]) == 1.0
    with config.override(sparse_fallback_limit=1000), pytest.raises(Exception, match="limit"):
        _dispatch("elemwise_div", [dense, rsp])  # no kernel: the guarded fallback refuses


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_relu_gradient_keeps_the_output_storage(stype):
    """MXNet 1.9.1: simple_bind(stype_dict={'x': stype}) of relu(x) gives x a gradient of
    x's storage; ``_backward_relu(dense ograd, sparse y)`` is sparse, dy where y > 0."""
    import torch

    from symgraph.sparse import formats
    y = formats.from_dense(torch.relu(torch.tensor(A)), stype)
    dy = torch.tensor(B) + 2
    out = _dispatch("_backward_relu", [dy, y])
    assert formats.stype_of(out) == stype
    np.testing.assert_allclose(formats.to_dense(out).numpy(), (B + 2) * (A > 0))
    both = _dispatch("_backward_relu", [formats.from_dense(dy, stype), y])
    np.testing.assert_allclose(formats.to_dense(both).numpy(), (B + 2) * (A > 0))


@pytest.mark.parametrize("union", [True, False])
def test_csr_and_rsp_combine_match_dense(union):
    """The union/intersection kernels on shuffled-free csr and row_sparse values."""
    import torch

    from symgraph.sparse import formats, rules
    a, b = torch.tensor(A), torch.tensor(B)
    for stype in ("row_sparse", "csr"):
        va, vb = formats.from_dense(a, stype), formats.from_dense(b, stype)
        combine = rules.rsp_combine if stype == "row_sparse" else rules.csr_combine
        out = combine(torch.add if union else torch.mul, va, vb, union)
        formats.check_format(out)
        want = a + b if union else a * b
        np.testing.assert_allclose(formats.to_dense(out).numpy(), want.numpy())
        stored = int(out.indices.numel())
        assert stored <= (va.indices.numel() + vb.indices.numel() if union else
                          min(va.indices.numel(), vb.indices.numel()))


def _record() -> None:
    """Print ``EXPECTED`` from the MXNet in this Python (run under MXNet 1.9.1)."""
    import os
    os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "0"
    import mxnet as mx
    rows = []
    for key, builder, args in all_cases():
        out = run_case(mx, builder, args)[0]
        rows.append((key, out.stype[0]))
    for name, stypes in SYMBOLIC:
        data = [POS if name == "sqrt" else A, B][:len(stypes)]
        names = ["a", "b"][:len(stypes)]
        sym = getattr(mx.sym, name)(*[mx.sym.var(n, stype=s) for n, s in zip(names, stypes)])
        exe = sym.bind(mx.cpu(), args={n: _arr(mx, m, s) for n, m, s in
                                       zip(names, data, stypes)})
        rows.append((f"{name}:{','.join(stypes)}", exe.forward()[0].stype[0]))
    keys = [k for k, _ in set(rows)]
    assert len(keys) == len(set(keys)), "imperative and bound stypes differ"
    for key, stype in sorted(set(rows)):
        print(f"    {key!r}: {stype!r},")


if __name__ == "__main__" and "--record" in sys.argv:
    _record()
