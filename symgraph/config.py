"""All of symgraph's configuration; the only module that reads ``os.environ``.

Values are read lazily (at first use), never at import, so tests and users can
set the environment or call :func:`set` before anything runs.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

_BACKENDS = ("auto", "triton", "torch")
# the variable through which a launcher hands its workers the job's secret (symgraph.launch)
JOB_SECRET_ENV = "SYMGRAPH_JOB_SECRET"


@dataclass(frozen=True)
class Config:
    """A snapshot of symgraph's settings."""

    backend: str = "auto"  # auto | triton | torch (see docs/architecture.md)
    interpret: bool = False  # run Triton kernels under TRITON_INTERPRET on CPU tensors
    fusion: bool = True  # fuse elementwise chains in the bound plan
    memory_reuse: bool = True  # let the plan share buffers between values with disjoint lifetimes
    cuda_graphs: bool = True  # capture bound plans on CUDA as CUDA graphs and replay them
    cache_dir: str = field(default_factory=lambda: os.path.expanduser("~/.cache/symgraph"))
    debug: bool = False  # check every kernel against its torch reference (slow)
    max_buckets: int = 32  # bound executors a BucketingModule caches (LRU); 0 = no bound
    # under autograd.record(), compose consecutive graph calls (a block and its loss) into one
    # graph run when a value is first needed (symgraph.deferred)
    defer_recorded: bool = True
    # bind-time graph rewrites declared by ops (compiler.rewrite), e.g. pick(log_softmax(x))
    # into one op; the symbol itself is never changed
    graph_rewrites: bool = True
    # distributed stores (symgraph.distributed): how long a collective or the rendezvous
    # waits for a lost worker before failing, the size of the flattened gradient buckets
    # reduced in one collective, and how many pushes of a key dist_async lets replicas drift
    # apart before averaging them
    dist_timeout: float = 300.0
    dist_bucket_mb: float = 25.0
    async_period: int = 8
    # the job's secret, set by the launcher (JOB_SECRET_ENV): symgraph signs the values it
    # writes to the rendezvous store with it and ignores values not signed with it
    job_secret: str = field(default="", repr=False)


_current: Config | None = None


def _from_env() -> Config:
    env = os.environ
    backend = env.get("SYMGRAPH_BACKEND", "auto").lower()
    if backend not in _BACKENDS:
        raise ValueError(f"SYMGRAPH_BACKEND={backend!r} is not one of {_BACKENDS}")
    return Config(
        backend=backend,
        interpret=env.get("TRITON_INTERPRET", "0") == "1",
        fusion=env.get("SYMGRAPH_FUSION", "1") != "0",
        memory_reuse=env.get("SYMGRAPH_MEMORY_REUSE", "1") != "0",
        cuda_graphs=env.get("SYMGRAPH_CUDA_GRAPHS", "1") != "0",
        cache_dir=env.get("SYMGRAPH_CACHE_DIR", Config().cache_dir),
        debug=env.get("SYMGRAPH_DEBUG", "0") == "1",
        max_buckets=int(env.get("SYMGRAPH_MAX_BUCKETS", str(Config.max_buckets))),
        defer_recorded=env.get("SYMGRAPH_DEFER_RECORDED", "1") != "0",
        graph_rewrites=env.get("SYMGRAPH_REWRITES", "1") != "0",
        dist_timeout=float(env.get("SYMGRAPH_DIST_TIMEOUT", str(Config.dist_timeout))),
        dist_bucket_mb=float(env.get("SYMGRAPH_DIST_BUCKET_MB", str(Config.dist_bucket_mb))),
        async_period=int(env.get("SYMGRAPH_ASYNC_PERIOD", str(Config.async_period))),
        job_secret=env.get(JOB_SECRET_ENV, ""),
    )


def get() -> Config:
    """Return the active configuration (read from the environment on first use)."""
    global _current
    if _current is None:
        _current = _from_env()
    return _current


def set(**changes) -> Config:  # noqa: A001 - mirrors dataclasses.replace
    """Change settings for the rest of the process; returns the previous config."""
    previous = get()
    if "backend" in changes and changes["backend"] not in _BACKENDS:
        raise ValueError(f"backend={changes['backend']!r} is not one of {_BACKENDS}")
    globals()["_current"] = replace(previous, **changes)
    return previous


def env_flag(name: str, default: str = "") -> str:
    """Read another environment variable (for MXNet-compatible knobs such as MXNET_*)."""
    return os.environ.get(name, default)


def environ() -> dict[str, str]:
    """A copy of this process's environment (to start child processes with)."""
    return dict(os.environ)


def prepend_env_path(name: str, path: str) -> None:
    """Put ``path`` first in the search-path variable ``name`` (``PYTHONPATH``) for child
    processes."""
    current = os.environ.get(name)
    os.environ[name] = os.pathsep.join([path, current] if current else [path])


@contextlib.contextmanager
def override(**changes) -> Iterator[Config]:
    """Change settings inside a ``with`` block (executors bound inside keep what they chose).

    >>> from symgraph import config
    >>> with config.override(backend="torch"):
    ...     config.get().backend
    'torch'
    """
    previous = set(**changes)
    try:
        yield get()
    finally:
        globals()["_current"] = previous


def use_backend(name: str) -> Config:
    """Select the kernel backend for executors bound from now on: auto, triton or torch."""
    return set(backend=name)


_applied: dict[str, str] = {}


def apply_kernel_settings() -> None:
    """Point the kernel caches at ``cache_dir`` (generated sources, and Triton's own cache of
    compiled binaries and autotune results, keyed by source, config and device), once per
    cache_dir, so a second process starts warm."""
    cache_dir = get().cache_dir
    if _applied.get("cache_dir") == cache_dir:
        return
    from .kernels import elementwise
    elementwise.set_cache_dir(cache_dir)
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(cache_dir, "triton"))
    _applied["cache_dir"] = cache_dir
