"""Batched small-matrix linear algebra: triangle/diagonal copies, Cholesky, triangular solves,
Gauss-Jordan (inverse, sign and log|det|), Householder LQ, Jacobi symmetric eigensolver.

Every factorization kernel runs one program per matrix of the batch and holds the whole
matrix in registers as a ``BN x BN`` tile (``BN`` the power of two >= n), so matrices up to
``MAX_N`` = 64 rows/columns are supported (MXNet's linalg ops are mostly used on small
matrices: covariances, Gaussian-process kernels); a larger matrix raises ``ValueError``
naming the limit. Matrix entries are picked from the tile by masked reductions (a column:
``sum(where(col == j, T, 0), 1)``). fp32 inputs compute in fp32, fp64 inputs in fp64.

Math (``n`` rows, one matrix; ``S`` the symmetric matrix read from one triangle):

* ``tri``: index copies between a matrix and its packed diagonal / triangle (MXNet's row-major
  packing: entry ``(r, c)`` of the lower triangle at ``r * (r + 1) / 2 + c``), triangle masks
  (``tril``/``triu`` with offset) and the mirror of one triangle onto the other;
* ``potrf``: right-looking Cholesky ``S = L L^T``: for each column j, ``d = sqrt(S[j, j])``,
  ``L[j:, j] = S[j:, j] / d`` and the trailing block loses ``l l^T``;
* ``trsm``: ``T X = alpha B`` for triangular ``T`` by forward (lower) or backward (upper)
  substitution; right-side and transposed forms are the same solve on swapped strides;
* ``gauss_jordan``: partial pivoting (largest magnitude, first on ties as LAPACK's getrf),
  giving the inverse, ``sign(det)`` and ``log|det|`` (sign 0 and -inf when singular);
* ``gelqf``: for each row i, the Householder reflection ``H = I - tau v v^T`` (LAPACK's
  dlarfg: ``beta = -sign(alpha) ||row[i:]||``, ``v = [1, row[i+1:] / (alpha - beta)]``,
  ``tau = (beta - alpha) / beta``) zeroes ``A[i, i+1:]``; ``A H_0 ... H_{m-1} = [L 0]`` and
  Q is the first m rows of ``(H_0 ... H_{m-1})^T``;
* ``syevd``: cyclic Jacobi: for each pair (i, j) the rotation with
  ``t = sign(th) / (|th| + sqrt(1 + th^2))``, ``th = (S[j, j] - S[i, i]) / (2 S[i, j])``
  zeroes ``S[i, j]``; sweeps until the off-diagonal squares sum below ``(n eps)^2`` of all;
  the rotations accumulated in U's rows, sorted by eigenvalue and signed as MXNet's.

Bytes moved: each kernel reads its inputs once and writes its outputs once.
"""
from __future__ import annotations

import torch
import triton.language as tl

from .philox import device
from .runtime import block_for, cdiv, kernel
from .table import KernelSpec, tensor_bytes

SUM = tl.standard._sum_combine
ARGMAX = tl.standard._argmax_combine_tie_break_left
MAX_N = 64
_TRI_KINDS = {"extractdiag": 0, "makediag": 1, "extracttrian": 2, "maketrian": 3, "mask": 4,
              "mirror": 5}


def _check_size(n: int, what: str) -> int:
    """The tile size for n x n matrices; beyond MAX_N a clear error."""
    if n > MAX_N:
        raise ValueError(f"{what}: matrices of size {n} exceed the Triton kernel's limit of "
                         f"{MAX_N} rows/columns (one program holds a whole matrix)")
    return block_for(max(n, 1), cap=MAX_N, floor=16)


def _f64(t: torch.Tensor) -> bool:
    return t.dtype == torch.float64


# ---------------------------------------------------------------- triangle / diagonal copies

@kernel
def _tri_kernel(src, dst, total, n, vlen, k, KIND: tl.constexpr, LOWER: tl.constexpr,
                UPPER: tl.constexpr, BLOCK: tl.constexpr):
    """One lane per matrix element (KIND: 0 extractdiag, 1 makediag, 2 extracttrian,
    3 maketrian, 4 triangle mask, 5 mirror of one triangle)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    mat = offs // (n * n)
    row = (offs // n) % n
    col = offs % n
    if KIND <= 1:
        on = mask & ((col - row) == k)
        vpos = mat * vlen + tl.where(k >= 0, row, col)
        if KIND == 0:
            tl.store(dst + vpos, tl.load(src + offs, mask=on), mask=on)
        else:
            tl.store(dst + offs, tl.load(src + vpos, mask=on, other=0.0), mask=mask)
    elif KIND <= 3:
        if UPPER:
            r, c = col - k, row
        else:
            r, c = row - k, col
        on = mask & (r >= c)
        vpos = mat * vlen + r * (r + 1) // 2 + c
        if KIND == 2:
            tl.store(dst + vpos, tl.load(src + offs, mask=on), mask=on)
        else:
            tl.store(dst + offs, tl.load(src + vpos, mask=on, other=0.0), mask=mask)
    elif KIND == 4:
        if LOWER:
            keep = mask & (col - row <= k)
        else:
            keep = mask & (col - row >= k)
        tl.store(dst + offs, tl.load(src + offs, mask=keep, other=0.0), mask=mask)
    else:
        hi = tl.maximum(row, col)
        lo = tl.minimum(row, col)
        if LOWER:
            s = mat * n * n + hi * n + lo
        else:
            s = mat * n * n + lo * n + hi
        tl.store(dst + offs, tl.load(src + s, mask=mask), mask=mask)


def tri_shape(kind: str, shape: tuple, offset: int) -> tuple:
    """Output shape of a ``tri`` copy of an input of ``shape`` (batch axes first)."""
    k = abs(offset)
    if kind == "extractdiag":
        return shape[:-2] + (shape[-1] - k,)
    if kind == "extracttrian":
        m = shape[-1] - k
        return shape[:-2] + (m * (m + 1) // 2,)
    if kind == "makediag":
        return shape[:-1] + (shape[-1] + k,) * 2
    if kind == "maketrian":
        m = int(((8 * shape[-1] + 1) ** 0.5 - 1) / 2 + 0.5)
        return shape[:-1] + (m + k,) * 2
    return shape


def tri_copy(x: torch.Tensor, kind: str, offset: int = 0, lower: bool = True,
             out=None) -> torch.Tensor:
    """Diagonal/triangle extraction or construction, triangle mask or mirror (see above)."""
    shape = tri_shape(kind, tuple(x.shape), offset)
    out = out if out is not None else torch.empty(shape, dtype=x.dtype, device=x.device)
    mat = out if kind in ("makediag", "maketrian") else x
    n = mat.shape[-1]
    vec = x if kind in ("makediag", "maketrian") else out
    total = mat.numel()
    if total == 0:
        return out
    block = block_for(total, cap=1024 if x.device.type == "cuda" else 256)
    upper = offset > 0 or (offset == 0 and not lower)
    k = abs(offset) if kind in ("extracttrian", "maketrian") else offset
    _tri_kernel[(cdiv(total, block),)](
        x.contiguous(), out, total, n, vec.shape[-1] if vec.dim() else 1, k,
        KIND=_TRI_KINDS[kind], LOWER=lower, UPPER=upper, BLOCK=block)
    return out


def _trian_index(n: int, offset: int, lower: bool, device) -> tuple:
    """(rows, cols) of the packed triangle's entries in MXNet's order, for an n x n matrix."""
    k = abs(offset)
    rows, cols = torch.tril_indices(n - k, n - k, device=device)
    if offset > 0 or (offset == 0 and not lower):
        return cols, rows + k
    return rows + k, cols


def tri_copy_ref(x: torch.Tensor, kind: str, offset: int = 0, lower: bool = True):
    """Reference: torch.diagonal / diag_embed / advanced indexing (reads and writes once)."""
    if kind == "extractdiag":
        return torch.diagonal(x, offset, -2, -1).contiguous()
    if kind == "makediag":
        return torch.diag_embed(x, offset)
    if kind == "mask":
        return torch.tril(x, offset) if lower else torch.triu(x, offset)
    if kind == "mirror":
        tri = torch.tril(x) if lower else torch.triu(x)
        return tri + tri.transpose(-1, -2) - torch.diag_embed(torch.diagonal(x, 0, -2, -1))
    if kind == "extracttrian":
        rows, cols = _trian_index(x.shape[-1], offset, lower, x.device)
        return x[..., rows, cols].contiguous()
    shape = tri_shape("maketrian", tuple(x.shape), offset)
    out = torch.zeros(shape, dtype=x.dtype, device=x.device)
    rows, cols = _trian_index(shape[-1], offset, lower, x.device)
    out[..., rows, cols] = x
    return out


# ---------------------------------------------------------------- Cholesky

@kernel
def _potrf_kernel(a, out, n, LOWER: tl.constexpr, F64: tl.constexpr, BN: tl.constexpr):
    """One matrix per program: L L^T = S with S mirrored from A's lower (upper) triangle;
    stores L (lower) or L^T (upper), zeros in the other triangle."""
    base = tl.program_id(0).to(tl.int64) * n * n
    rv = tl.arange(0, BN)
    r = rv[:, None]
    c = rv[None, :]
    inb = (r < n) & (c < n)
    hi = tl.maximum(r, c)
    lo = tl.minimum(r, c)
    if LOWER:
        s = tl.load(a + base + hi * n + lo, mask=inb, other=0.0)
    else:
        s = tl.load(a + base + lo * n + hi, mask=inb, other=0.0)
    s = s.to(tl.float64) if F64 else s.to(tl.float32)
    for j in range(0, n):
        colj = tl.reduce(tl.where(c == j, s, 0.0), 1, SUM)
        rowj = tl.reduce(tl.where(r == j, s, 0.0), 0, SUM)
        d = tl.sqrt(tl.reduce(tl.where(rv == j, colj, 0.0), 0, SUM))
        lc = tl.where(rv > j, colj / d, 0.0)
        lr = tl.where(rv > j, rowj / d, 0.0)
        s = s - lc[:, None] * lr[None, :]
        s = tl.where((c == j) & (r > j), lc[:, None], s)
        s = tl.where((c == j) & (r == j), d, s)
    val = tl.where(r >= c, s, 0.0).to(out.dtype.element_ty)
    if LOWER:
        tl.store(out + base + r * n + c, val, mask=inb)
    else:
        tl.store(out + base + c * n + r, val, mask=inb)


def potrf(a: torch.Tensor, lower: bool = True, out=None) -> torch.Tensor:
    """Cholesky factor of each matrix of ``a`` (..., n, n), read from one triangle."""
    n = a.shape[-1]
    out = out if out is not None else torch.empty_like(a, memory_format=torch.contiguous_format)
    batch = a.numel() // max(n * n, 1)
    if batch and n:
        _potrf_kernel[(batch,)](a.contiguous(), out, n, LOWER=lower, F64=_f64(a),
                                BN=_check_size(n, "linalg_potrf"))
    return out


def potrf_ref(a: torch.Tensor, lower: bool = True) -> torch.Tensor:
    """Reference: torch.linalg.cholesky of the mirrored triangle (reads and writes once); a
    matrix that is not positive definite gets NaN (as the kernel's failed pivot)."""
    s = tri_copy_ref(a, "mirror", 0, lower)
    low, info = torch.linalg.cholesky_ex(s)
    low = torch.where((info == 0)[..., None, None], low, torch.nan)
    return low if lower else low.transpose(-1, -2).contiguous()


# ---------------------------------------------------------------- triangular solve

@kernel
def _trsm_kernel(a, b, out, n, p, t_rs, t_cs, x_rs, x_cs, alpha, TLOWER: tl.constexpr,
                 F64: tl.constexpr, BN: tl.constexpr, BP: tl.constexpr):
    """One matrix per program: T X = alpha B with T[i, j] = a[i * t_rs + j * t_cs] (n x n
    triangular) and X[i, q], B[i, q] at i * x_rs + q * x_cs (n x p)."""
    pid = tl.program_id(0).to(tl.int64)
    rv = tl.arange(0, BN)
    r = rv[:, None]
    ct = tl.arange(0, BN)[None, :]
    cq = tl.arange(0, BP)[None, :]
    tt = tl.load(a + pid * n * n + ct * t_rs + r * t_cs, mask=(r < n) & (ct < n), other=0.0)
    xmask = (r < n) & (cq < p)
    xoff = pid * n * p + r * x_rs + cq * x_cs
    bt = tl.load(b + xoff, mask=xmask, other=0.0)
    if F64:
        tt, bt = tt.to(tl.float64), bt.to(tl.float64)
    else:
        tt, bt = tt.to(tl.float32), bt.to(tl.float32)
    x = bt * 0.0
    for step in range(0, n):
        i = step if TLOWER else n - 1 - step
        tcol = tl.reduce(tl.where(ct == i, tt, 0.0), 1, SUM)
        acc = tl.reduce(tcol[:, None] * x, 0, SUM)
        dii = tl.reduce(tl.where(rv == i, tcol, 0.0), 0, SUM)
        bi = tl.reduce(tl.where(r == i, bt, 0.0), 0, SUM)
        x = tl.where(r == i, ((alpha * bi - acc) / dii)[None, :], x)
    tl.store(out + xoff, x.to(out.dtype.element_ty), mask=xmask)


def trsm(a: torch.Tensor, b: torch.Tensor, alpha: float = 1.0, rightside: bool = False,
         lower: bool = True, transpose: bool = False, out=None) -> torch.Tensor:
    """Solve op(A) X = alpha B (or X op(A) = alpha B with ``rightside``) per matrix."""
    n = a.shape[-1]
    rows, cols = b.shape[-2], b.shape[-1]
    given = out
    if out is None or not out.is_contiguous():
        out = torch.empty_like(b, memory_format=torch.contiguous_format)
    batch = b.numel() // max(rows * cols, 1)
    if not batch or not n:
        return out if given is None else given.copy_(out)
    if rightside:  # op(A)^T X^T = alpha B^T
        t_rs, t_cs = (n, 1) if transpose else (1, n)
        tlower, p, x_rs, x_cs = lower == transpose, rows, 1, cols
    else:
        t_rs, t_cs = (1, n) if transpose else (n, 1)
        tlower, p, x_rs, x_cs = lower != transpose, cols, cols, 1
    _trsm_kernel[(batch,)](a.contiguous(), b.contiguous(), out, n, p, t_rs, t_cs, x_rs, x_cs,
                           float(alpha), TLOWER=tlower, F64=_f64(b),
                           BN=_check_size(n, "linalg_trsm"),
                           BP=block_for(p, cap=1 << 20, floor=16))
    return out if given is None or given is out else given.copy_(out)


def _op_tri(a: torch.Tensor, lower: bool, transpose: bool) -> torch.Tensor:
    t = torch.tril(a) if lower else torch.triu(a)
    return t.transpose(-1, -2) if transpose else t


def trsm_ref(a, b, alpha=1.0, rightside=False, lower=True, transpose=False):
    """Reference: torch.linalg.solve_triangular (reads A, B once, writes X once)."""
    t = _op_tri(a, lower, transpose)
    upper = lower == transpose
    x = torch.linalg.solve_triangular(t, alpha * b, upper=upper, left=not rightside)
    return x.contiguous()


# ---------------------------------------------------------------- Gauss-Jordan

@kernel
def _gauss_jordan_kernel(a, inv, sign, logdet, n, WANT_INV: tl.constexpr, F64: tl.constexpr,
                         BN: tl.constexpr):
    """One matrix per program: Gauss-Jordan elimination with partial pivoting."""
    pid = tl.program_id(0).to(tl.int64)
    rv = tl.arange(0, BN)
    r = rv[:, None]
    c = rv[None, :]
    inb = (r < n) & (c < n)
    m = tl.load(a + pid * n * n + r * n + c, mask=inb, other=0.0)
    m = m.to(tl.float64) if F64 else m.to(tl.float32)
    e = tl.where((r == c) & inb, 1.0, 0.0).to(m.dtype)
    sgn = tl.full((), 1.0, m.dtype)
    ld = tl.full((), 0.0, m.dtype)
    for k in range(0, n):
        colk = tl.reduce(tl.where(c == k, m, 0.0), 1, SUM)
        cand = tl.where((rv >= k) & (rv < n), tl.abs(colk), -1.0)
        _, p = tl.reduce((cand, rv), 0, ARGMAX)
        rowk = tl.reduce(tl.where(r == k, m, 0.0), 0, SUM)
        rowp = tl.reduce(tl.where(r == p, m, 0.0), 0, SUM)
        erowk = tl.reduce(tl.where(r == k, e, 0.0), 0, SUM)
        erowp = tl.reduce(tl.where(r == p, e, 0.0), 0, SUM)
        piv = tl.reduce(tl.where(rv == k, rowp, 0.0), 0, SUM)
        sgn = tl.where(p != k, -sgn, sgn)
        sgn = tl.where(piv > 0, sgn, tl.where(piv < 0, -sgn, 0.0))
        ld += tl.log(tl.abs(piv))
        safe = tl.where(piv == 0, 1.0, piv)
        nrow = rowp / safe
        erow = erowp / safe
        colk = tl.where(rv == p, tl.where(rv == k, 0.0, tl.reduce(
            tl.where(rv == k, colk, 0.0), 0, SUM)), tl.where(rv == k, 0.0, colk))
        m = tl.where(r == p, rowk[None, :], m)
        e = tl.where(r == p, erowk[None, :], e)
        m = tl.where(r == k, nrow[None, :], m - colk[:, None] * nrow[None, :])
        e = tl.where(r == k, erow[None, :], e - colk[:, None] * erow[None, :])
    tl.store(sign + pid, sgn.to(sign.dtype.element_ty))
    tl.store(logdet + pid, ld.to(logdet.dtype.element_ty))
    if WANT_INV:
        tl.store(inv + pid * n * n + r * n + c, e.to(inv.dtype.element_ty), mask=inb)


def gauss_jordan(a: torch.Tensor, want_inverse: bool = True, out=None):
    """(inverse or None, sign(det), log|det|) of each matrix of ``a`` (..., n, n)."""
    n = a.shape[-1]
    batch_shape = tuple(a.shape[:-2])
    inv, sign, logdet = out if out is not None else (None, None, None)
    if want_inverse and inv is None:
        inv = torch.empty_like(a, memory_format=torch.contiguous_format)
    sign = sign if sign is not None else torch.empty(batch_shape, dtype=a.dtype, device=a.device)
    logdet = logdet if logdet is not None else torch.empty_like(sign)
    batch = sign.numel()
    if batch and n:
        _gauss_jordan_kernel[(batch,)](a.contiguous(), inv if want_inverse else sign, sign,
                                       logdet, n, WANT_INV=want_inverse, F64=_f64(a),
                                       BN=_check_size(n, "linalg inverse/det"))
    elif batch:
        sign.fill_(1.0)
        logdet.fill_(0.0)
    return inv, sign, logdet


def gauss_jordan_ref(a: torch.Tensor, want_inverse: bool = True):
    """Reference: torch.linalg.inv and an LU with partial pivoting (LAPACK's getrf, whose
    zero pivot gives an exactly singular matrix sign 0 and log|det| -inf, where
    torch.linalg.slogdet may not); reads A once, writes outputs once."""
    lu, piv, _ = torch.linalg.lu_factor_ex(a)
    diag = torch.diagonal(lu, 0, -2, -1)
    swaps = (piv != torch.arange(1, a.shape[-1] + 1, device=a.device)).sum(-1)
    sign = (1 - 2 * (swaps % 2)).to(a.dtype) * torch.sign(diag).prod(-1)
    logdet = diag.abs().log().sum(-1)
    return (torch.linalg.inv_ex(a)[0] if want_inverse else None), sign, logdet


# ---------------------------------------------------------------- LQ (Householder)

@kernel
def _gelqf_kernel(a, q, low, m, n, F64: tl.constexpr, BN: tl.constexpr):
    """One matrix per program: A = L Q for the m x n matrix A (m <= n) by Householder
    reflections applied from the right, LAPACK's dgeqrf on A^T (beta = -sign(alpha) norm,
    no reflection when the row's tail is zero)."""
    pid = tl.program_id(0).to(tl.int64)
    rv = tl.arange(0, BN)
    r = rv[:, None]
    c = rv[None, :]
    t = tl.load(a + pid * m * n + r * n + c, mask=(r < m) & (c < n), other=0.0)
    t = t.to(tl.float64) if F64 else t.to(tl.float32)
    p = tl.where((r == c) & (r < n), 1.0, 0.0).to(t.dtype)  # H_0 H_1 ... so far
    for i in range(0, m):
        row = tl.reduce(tl.where(r == i, t, 0.0), 0, SUM)
        alpha = tl.reduce(tl.where(rv == i, row, 0.0), 0, SUM)
        xsq = tl.reduce(tl.where(rv > i, row * row, 0.0), 0, SUM)
        norm = tl.sqrt(alpha * alpha + xsq)
        beta = tl.where(alpha >= 0, -norm, norm)
        refl = xsq > 0
        tau = tl.where(refl, (beta - alpha) / tl.where(refl, beta, 1.0), 0.0)
        scale = tl.where(refl, 1.0 / tl.where(refl, alpha - beta, 1.0), 0.0)
        v = tl.where(rv == i, 1.0, tl.where(rv > i, row * scale, 0.0))
        tv = tl.reduce(t * v[None, :], 1, SUM)
        t = tl.where(r > i, t - (tau * tv)[:, None] * v[None, :], t)
        diag = tl.where(refl, beta, alpha)
        t = tl.where((r == i) & (c >= i), tl.where(c == i, diag, 0.0), t)
        pv = tl.reduce(p * v[None, :], 1, SUM)
        p = p - (tau * pv)[:, None] * v[None, :]
    lmask = (r < m) & (c < m)
    tl.store(low + pid * m * m + r * m + c,
             tl.where(r >= c, t, 0.0).to(low.dtype.element_ty), mask=lmask)
    # Q = the first m rows of (H_0 ... H_{m-1})^T: Q[c, r] = P[r, c]
    tl.store(q + pid * m * n + c * n + r, p.to(q.dtype.element_ty), mask=(c < m) & (r < n))


def gelqf(a: torch.Tensor, out=None):
    """(Q, L) with A = L Q, Q row-orthonormal, for each (m, n) matrix of ``a`` (m <= n)."""
    m, n = a.shape[-2], a.shape[-1]
    q, low = out if out is not None else (None, None)
    q = q if q is not None else torch.empty_like(a, memory_format=torch.contiguous_format)
    low = low if low is not None else a.new_empty(tuple(a.shape[:-1]) + (m,))
    batch = a.numel() // max(m * n, 1)
    if batch and m:
        _gelqf_kernel[(batch,)](a.contiguous(), q, low, m, n, F64=_f64(a),
                                BN=_check_size(n, "linalg_gelqf"))
    return q, low


def gelqf_ref(a: torch.Tensor):
    """Reference: torch.linalg.qr of A^T (LAPACK geqrf + orgqr, as MXNet's gelqf + orglq;
    reads A once, writes Q and L once)."""
    qt, rt = torch.linalg.qr(a.transpose(-1, -2))
    return qt.transpose(-1, -2).contiguous(), rt.transpose(-1, -2).contiguous()


# ---------------------------------------------------------------- symmetric eigensolver

@kernel
def _syevd_kernel(a, u, lam, n, tol, max_sweeps, F64: tl.constexpr, BN: tl.constexpr):
    """One matrix per program: cyclic Jacobi on S (mirrored from A's lower triangle) until
    the off-diagonal mass is below ``tol`` times the total; rows of U are eigenvectors,
    sorted by ascending eigenvalue, each signed so its largest |entry| is positive."""
    pid = tl.program_id(0).to(tl.int64)
    rv = tl.arange(0, BN)
    r = rv[:, None]
    c = rv[None, :]
    inb = (r < n) & (c < n)
    s = tl.load(a + pid * n * n + tl.maximum(r, c) * n + tl.minimum(r, c), mask=inb, other=0.0)
    s = s.to(tl.float64) if F64 else s.to(tl.float32)
    ev = tl.where((r == c) & inb, 1.0, 0.0).to(s.dtype)
    total = tl.reduce(s * s, 1, SUM)
    total = tl.reduce(total, 0, SUM)
    off = tl.reduce(tl.reduce(tl.where(r != c, s * s, 0.0), 1, SUM), 0, SUM)
    sweep = 0
    while (off > tol * total) & (sweep < max_sweeps):
        for i in range(0, n - 1):
            for j in range(i + 1, n):
                s, ev = _jacobi_rotate(s, ev, i, j, rv, r, c)
        off = tl.reduce(tl.reduce(tl.where(r != c, s * s, 0.0), 1, SUM), 0, SUM)
        sweep += 1
    _syevd_store(s, ev, u, lam, pid, n, rv, r, c)


@device
def _jacobi_rotate(s, ev, i, j, rv, r, c):
    """The rotation in the (i, j) plane that zeroes s[i, j] (Golub & Van Loan 8.5.2)."""
    rowi = tl.reduce(tl.where(r == i, s, 0.0), 0, SUM)
    rowj = tl.reduce(tl.where(r == j, s, 0.0), 0, SUM)
    aii = tl.reduce(tl.where(rv == i, rowi, 0.0), 0, SUM)
    aij = tl.reduce(tl.where(rv == j, rowi, 0.0), 0, SUM)
    ajj = tl.reduce(tl.where(rv == j, rowj, 0.0), 0, SUM)
    rot = aij != 0
    theta = (ajj - aii) / (2.0 * tl.where(rot, aij, 1.0))
    big = tl.abs(theta) > 1e15  # theta^2 would overflow float32: t ~ 1 / (2 theta)
    th = tl.where(big, 1.0, theta)
    t = tl.where(th >= 0, 1.0, -1.0) / (tl.abs(th) + tl.sqrt(1.0 + th * th))
    t = tl.where(rot, tl.where(big, 0.5 / tl.where(big, theta, 1.0), t), 0.0)
    cs = 1.0 / tl.sqrt(1.0 + t * t)
    sn = t * cs
    newi = cs * rowi - sn * rowj
    newj = sn * rowi + cs * rowj
    newi = tl.where(rv == i, aii - t * aij, tl.where(rv == j, 0.0, newi))
    newj = tl.where(rv == j, ajj + t * aij, tl.where(rv == i, 0.0, newj))
    s = tl.where(r == i, newi[None, :], tl.where(r == j, newj[None, :], s))
    s = tl.where(c == i, newi[:, None], tl.where(c == j, newj[:, None], s))
    ui = tl.reduce(tl.where(r == i, ev, 0.0), 0, SUM)
    uj = tl.reduce(tl.where(r == j, ev, 0.0), 0, SUM)
    ev = tl.where(r == i, (cs * ui - sn * uj)[None, :],
                  tl.where(r == j, (sn * ui + cs * uj)[None, :], ev))
    return s, ev


@device
def _syevd_store(s, ev, u, lam, pid, n, rv, r, c):
    """Sign each eigenvector (row of ev), then store rows and eigenvalues by ascending rank."""
    big = tl.where(c < n, tl.abs(ev), -1.0)
    _, k = tl.reduce((big, c + r * 0), 1, ARGMAX)
    lead = tl.reduce(tl.where(c == k[:, None], ev, 0.0), 1, SUM)
    ev = tl.where(lead[:, None] < 0, -ev, ev)
    lam_r = tl.reduce(tl.where(r == c, s, 0.0), 1, SUM)
    lam_c = tl.reduce(tl.where(r == c, s, 0.0), 0, SUM)
    before = (lam_c[None, :] < lam_r[:, None]) | ((lam_c[None, :] == lam_r[:, None]) & (c < r))
    rank = tl.reduce(tl.where(before & (c < n), 1, 0), 1, SUM)
    tl.store(lam + pid * n + rank, lam_r.to(lam.dtype.element_ty), mask=rv < n)
    tl.store(u + pid * n * n + rank[:, None] * n + c, ev.to(u.dtype.element_ty),
             mask=(r < n) & (c < n))


_JACOBI = {torch.float32: 1.2e-7, torch.float64: 2.3e-16}


def syevd(a: torch.Tensor, out=None):
    """(U, lambda) of each symmetric matrix of ``a`` (..., n, n), read from its lower
    triangle: A = U^T diag(lambda) U, lambda ascending (see ``_syevd_kernel``)."""
    n = a.shape[-1]
    u, lam = out if out is not None else (None, None)
    u = u if u is not None else torch.empty_like(a, memory_format=torch.contiguous_format)
    lam = lam if lam is not None else a.new_empty(tuple(a.shape[:-1]))
    batch = a.numel() // max(n * n, 1)
    if batch and n:
        tol = (n * _JACOBI.get(a.dtype, 1.2e-7)) ** 2
        _syevd_kernel[(batch,)](a.contiguous(), u, lam, n, tol, 30, F64=_f64(a),
                                BN=_check_size(n, "linalg_syevd"))
    return u, lam


def syevd_ref(a: torch.Tensor):
    """Reference: torch.linalg.eigh of the lower triangle, MXNet's eigenvector signs (reads
    A once, writes U and lambda once)."""
    lam, v = torch.linalg.eigh(tri_copy_ref(a, "mirror", 0, True))
    u = v.transpose(-1, -2)
    k = u.abs().argmax(-1, keepdim=True)
    sign = torch.where(torch.gather(u, -1, k) < 0, -1.0, 1.0).to(u.dtype)
    return (u * sign).contiguous(), lam


# ---------------------------------------------------------------- table

def _spd(dtype, device, shape):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(tuple(shape), generator=gen, dtype=torch.float64)
    s = x @ x.transpose(-1, -2) + shape[-1] * torch.eye(shape[-1], dtype=torch.float64)
    return s.to(device=device, dtype=dtype)


def _make_tri(kind: str, offset: int, lower: bool):
    def make(dtype, device, shape):
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype)
        return (x, kind, offset, lower), {}
    return make


def _make_potrf(dtype, device, shape):
    return (_spd(dtype, device, shape), False), {}


def _make_trsm(dtype, device, shape):
    a = _spd(dtype, device, shape)
    gen = torch.Generator().manual_seed(1)
    b = torch.randn(tuple(shape[:-1]) + (3,), generator=gen).to(device=device, dtype=dtype)
    return (a, b, 0.5, False, True, True), {}


def _make_gauss(dtype, device, shape):
    return (_spd(dtype, device, shape), True), {}


def _make_gelqf(dtype, device, shape):
    gen = torch.Generator().manual_seed(0)
    return (torch.randn(tuple(shape), generator=gen).to(device=device, dtype=dtype),), {}


def _make_syevd(dtype, device, shape):
    x = _spd(torch.float64, device, shape)  # symmetric, eigenvalues spread over [n, ~3n]
    return ((x + torch.diag_embed(torch.arange(shape[-1], device=device) * 0.5)).to(dtype),), {}


_TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-9, 1e-9)}
_F = (torch.float32, torch.float64)
KERNELS = [
    KernelSpec("linalg_extracttrian", tri_copy, tri_copy_ref,
               _make_tri("extracttrian", -1, True), shapes=((2, 5, 5), (7, 7)),
               bench_shapes=((1024, 32, 32),), dtypes=_F, family="linalg",
               bytes=lambda x, *a: 2 * tensor_bytes(x)),
    KernelSpec("linalg_maketrian", tri_copy, tri_copy_ref, _make_tri("maketrian", 1, True),
               shapes=((2, 10), (3, 1, 6)), bench_shapes=((1024, 528),), dtypes=_F,
               family="linalg", bytes=lambda x, *a: 4 * tensor_bytes(x)),
    KernelSpec("linalg_mirror", tri_copy, tri_copy_ref, _make_tri("mirror", 0, False),
               shapes=((2, 5, 5),), bench_shapes=((1024, 32, 32),), dtypes=_F,
               family="linalg", bytes=lambda x, *a: 2 * tensor_bytes(x)),
    KernelSpec("linalg_potrf", potrf, potrf_ref, _make_potrf, shapes=((2, 5, 5), (3, 3)),
               bench_shapes=((1024, 32, 32),), dtypes=_F, tol=_TOL, family="linalg",
               bytes=lambda a, *r: 2 * tensor_bytes(a),
               flops=lambda a, *r: a.numel() * a.shape[-1] // 3),
    KernelSpec("linalg_trsm", trsm, trsm_ref, _make_trsm, shapes=((2, 5, 5), (4, 4)),
               bench_shapes=((1024, 32, 32),), dtypes=_F, tol=_TOL, family="linalg",
               bytes=lambda a, b, *r: tensor_bytes(a) + 2 * tensor_bytes(b),
               flops=lambda a, b, *r: b.numel() * a.shape[-1]),
    KernelSpec("linalg_gauss_jordan", gauss_jordan, gauss_jordan_ref, _make_gauss,
               shapes=((2, 5, 5), (3, 3)), bench_shapes=((1024, 32, 32),), dtypes=_F,
               tol=_TOL, family="linalg", bytes=lambda a, *r: 2 * tensor_bytes(a),
               flops=lambda a, *r: 2 * a.numel() * a.shape[-1]),
    KernelSpec("linalg_gelqf", gelqf, gelqf_ref, _make_gelqf, shapes=((2, 3, 5), (4, 4)),
               bench_shapes=((1024, 16, 32),), dtypes=_F, tol=_TOL, family="linalg",
               bytes=lambda a: 2 * tensor_bytes(a) + tensor_bytes(a) * a.shape[-2] // a.shape[-1],
               flops=lambda a: 4 * a.numel() * a.shape[-1]),
    # one Jacobi sweep is 2 n^3 multiply-adds on A and U, ~8 sweeps at n = 32
    KernelSpec("linalg_syevd", syevd, syevd_ref, _make_syevd, shapes=((2, 5, 5), (3, 3)),
               bench_shapes=((1024, 32, 32),), dtypes=_F, tol=_TOL, family="linalg",
               bytes=lambda a: 2 * tensor_bytes(a) + tensor_bytes(a) // a.shape[-1],
               flops=lambda a: 32 * a.numel() * a.shape[-1]),
]
