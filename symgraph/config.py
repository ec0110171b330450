"""All of symgraph's configuration; the only module that reads ``os.environ``.

Values are read lazily (at first use), never at import, so tests and users can
set the environment or call :func:`set` before anything runs. symgraph's own settings are
:class:`Config` fields (``SYMGRAPH_*``); the variables MXNet, its launchers and the platform
define that symgraph honours are listed in one table, :data:`MXNET_ENV`, and read with
:func:`env`.

>>> from symgraph import config
>>> config.env("MXNET_UPDATE_ON_KVSTORE") in (True, False)
True
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

_BACKENDS = ("auto", "triton", "torch")
# the variable through which a launcher hands its workers the job's secret (symgraph.launch)
JOB_SECRET_ENV = "SYMGRAPH_JOB_SECRET"


@dataclass(frozen=True)
class Config:
    """A snapshot of symgraph's settings."""

    backend: str = "auto"  # auto | triton | torch (see docs/architecture.md)
    fusion: bool = True  # fuse elementwise chains in the bound plan
    cuda_graphs: bool = True  # capture bound plans on CUDA as CUDA graphs and replay them
    # run a recurrent layer's forward on CUDA as one persistent launch over all its steps
    # (a grid-wide barrier per step) instead of a launch per step; off until measured on a
    # GPU (docs/gpu.md)
    rnn_persistent: bool = False
    cache_dir: str = field(default_factory=lambda: os.path.expanduser("~/.cache/symgraph"))
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
    # the most elements a storage fallback may densify: an operator without a kernel for
    # its sparse inputs runs on dense copies of them (as MXNet does), unless a copy would be
    # larger than this, which raises StorageFallbackError instead; 0 = no limit
    sparse_fallback_limit: int = 1 << 26
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
        fusion=env.get("SYMGRAPH_FUSION", "1") != "0",
        cuda_graphs=env.get("SYMGRAPH_CUDA_GRAPHS", "1") != "0",
        rnn_persistent=env.get("SYMGRAPH_RNN_PERSISTENT", "0") != "0",
        cache_dir=env.get("SYMGRAPH_CACHE_DIR", Config().cache_dir),
        max_buckets=int(env.get("SYMGRAPH_MAX_BUCKETS", str(Config.max_buckets))),
        defer_recorded=env.get("SYMGRAPH_DEFER_RECORDED", "1") != "0",
        graph_rewrites=env.get("SYMGRAPH_REWRITES", "1") != "0",
        dist_timeout=float(env.get("SYMGRAPH_DIST_TIMEOUT", str(Config.dist_timeout))),
        dist_bucket_mb=float(env.get("SYMGRAPH_DIST_BUCKET_MB", str(Config.dist_bucket_mb))),
        async_period=int(env.get("SYMGRAPH_ASYNC_PERIOD", str(Config.async_period))),
        sparse_fallback_limit=int(env.get("SYMGRAPH_SPARSE_FALLBACK_LIMIT",
                                          str(Config.sparse_fallback_limit))),
        job_secret=env.get(JOB_SECRET_ENV, ""),
    )


def get() -> Config:
    """Return the active configuration (read from the environment on first use)."""
    global _current
    if _current is None:
        _current = _from_env()
    return _current


def set(**changes) -> Config:  # mirrors dataclasses.replace
    """Change settings for the rest of the process; returns the previous config."""
    previous = get()
    if "backend" in changes and changes["backend"] not in _BACKENDS:
        raise ValueError(f"backend={changes['backend']!r} is not one of {_BACKENDS}")
    globals()["_current"] = replace(previous, **changes)
    return previous


# ---------------------------------------------------------------- MXNet's environment

@dataclass(frozen=True)
class EnvVar:
    """One environment variable symgraph honours: how its text is read, its value when
    unset, and what it does."""

    parse: Callable[[str], object]
    default: object
    doc: str


def _int_flag(text: str) -> bool:
    return bool(int(text))  # MXNet's dmlc::GetEnv<bool>: an integer, 0 is off


def _not_zero(text: str) -> bool:
    return text != "0"


def _is_one(text: str) -> bool:
    return text == "1"


def _is_true(text: str) -> bool:
    return text == "True"  # how torchrun writes it


def _int_or_none(text: str) -> int | None:
    return int(text) if text else None


# Every variable of MXNet, its launchers or the platform that symgraph reads (symgraph's own
# SYMGRAPH_* settings are Config fields); read them with env(name), at use, not at import.
MXNET_ENV: dict[str, EnvVar] = {
    "MXNET_HOME": EnvVar(str, "", "where downloaded data lives; empty: ~/.mxnet (base.data_dir)"),
    "APPDATA": EnvVar(str, "", "Windows: the folder holding the default mxnet data folder"),
    "MXNET_UPDATE_ON_KVSTORE": EnvVar(_int_flag, True, "update weights on the kvstore (model)"),
    "MXNET_ELIMINATE_COMMON_EXPR": EnvVar(_not_zero, True,
                                          "merge identical subexpressions at bind; 0: off"),
    "DMLC_ROLE": EnvVar(str, "", "MXNet's launch contract: worker, server or scheduler"),
    "DMLC_PS_ROOT_URI": EnvVar(str, "127.0.0.1", "the scheduler's address"),
    "DMLC_PS_ROOT_PORT": EnvVar(_int_or_none, None, "the scheduler's port"),
    "DMLC_NUM_WORKER": EnvVar(_int_or_none, None, "the number of workers"),
    "MASTER_ADDR": EnvVar(str, "", "PyTorch's launch contract: the store's address"),
    "MASTER_PORT": EnvVar(_int_or_none, None, "the store's port"),
    "WORLD_SIZE": EnvVar(_int_or_none, None, "the number of workers"),
    "RANK": EnvVar(_int_or_none, None, "this worker's rank"),
    "TORCHELASTIC_USE_AGENT_STORE": EnvVar(_is_true, False,
                                           "torchrun's agent hosts the store for every rank"),
    "NVIDIA_TF32_OVERRIDE": EnvVar(_not_zero, True, "0: no TF32 (test_utils.effective_dtype)"),
    "CD_JOB": EnvVar(_is_one, False, "1: a Continuous Delivery run (test_utils.is_cd_run)"),
    "MXNET_STORAGE_FALLBACK_LOG_VERBOSE": EnvVar(_int_flag, True,
                                                 "log each operator that runs sparse inputs "
                                                 "densely (storage fallback), once"),
}


def env(name: str):
    """The value of the variable ``name`` of :data:`MXNET_ENV`, parsed; its default when
    unset. A name not in the table is a ``KeyError``: add it there.

    >>> env("CD_JOB") in (True, False)
    True
    """
    var = MXNET_ENV[name]
    text = os.environ.get(name)
    return var.default if text is None else var.parse(text)


def getenv(name: str) -> str | None:
    """Any environment variable's text, or None when unset (MXNet's free-form
    ``mx.util.getenv``; symgraph itself reads :func:`env`)."""
    return os.environ.get(name)


def setenv(name: str, value: str | None) -> None:
    """Set an environment variable (``None`` removes it); child processes see it too
    (MXNet's ``mx.util.setenv``)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


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


def triton_cache_dir() -> str:
    """Where Triton caches compiled kernels: ``$TRITON_CACHE_DIR`` when the user set it,
    else ``<cache_dir>/triton``."""
    return os.environ.get("TRITON_CACHE_DIR") or os.path.join(get().cache_dir, "triton")


def point_kernel_caches_at_cache_dir() -> None:
    """Point the kernel caches at ``cache_dir``: the generated sources, and Triton's own
    cache of compiled binaries and autotune results (keyed by source, config and device,
    set through Triton's ``knobs.cache.dir``), once per cache_dir, so a second process
    starts warm."""
    cache_dir = get().cache_dir
    if _applied.get("cache_dir") == cache_dir:
        return
    from .kernels import elementwise
    elementwise.set_cache_dir(cache_dir)
    if "TRITON_CACHE_DIR" not in os.environ:
        try:
            from triton import knobs
        except ImportError:  # Triton < 3.4 reads the variable when it opens its cache
            os.environ["TRITON_CACHE_DIR"] = triton_cache_dir()
        else:
            knobs.cache.dir = triton_cache_dir()
    _applied["cache_dir"] = cache_dir
