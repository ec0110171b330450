"""The rendezvous store of a distributed job: where workers meet, and what they write there.

Workers find each other the way PyTorch jobs do: ``MASTER_ADDR``/``MASTER_PORT``,
``WORLD_SIZE`` and ``RANK``, as set by ``torchrun`` or ``python -m symgraph.launch``
(:func:`_env_rendezvous`), or by MXNet's launch contract (:func:`_dmlc_rendezvous`).

Every store symgraph hosts (rank 0's under ``MASTER_ADDR``, the scheduler's, and through
:mod:`symgraph.launch` torchrun's) listens on the given address only (:func:`host_store`;
``127.0.0.1`` for local jobs), never on every interface. TCP stores have no authentication,
so the values symgraph writes there (heartbeats, ``done`` marks) are signed with the job's
secret (``config.job_secret``, set by the launcher) and every value read back is parsed
strictly: a malformed or unsigned value, e.g. a stranger's, is logged and ignored
(:class:`StoreValueError` inside).
"""
from __future__ import annotations

import datetime
import hashlib
import hmac
import logging
import math
import socket
import sys
import time

from .. import config
from ..base import MXNetError

BEAT_S = 0.5  # heartbeat period; a rank silent for 6 periods counts as lost
_LOG = logging.getLogger(__name__)
_REJECTED: set = set()  # store keys whose rejected values were logged (once per key)


class StoreValueError(MXNetError, ValueError):
    """A value in the rendezvous store is malformed or not signed with this job's secret."""


def _dist():
    import torch.distributed as dist
    return dist


def _timeout() -> datetime.timedelta:
    return datetime.timedelta(seconds=config.get().dist_timeout)


def _env_int(name: str) -> int:
    value = config.env(name)
    if value is None:
        raise MXNetError(f"distributed kvstore: environment variable {name} is not set (launch "
                         "workers with `python -m symgraph.launch -n N script.py` or torchrun)")
    return value


def _env_rendezvous() -> tuple:
    """A worker under PyTorch's launch contract: rank 0 hosts the store at ``MASTER_ADDR``
    (on that address only), unless a torchrun agent hosts it for all ranks."""
    dist = _dist()
    size, rank = _env_int("WORLD_SIZE"), _env_int("RANK")
    if config.env("TORCHELASTIC_USE_AGENT_STORE"):
        # every rank is a client of the agent's store (symgraph.launch binds it to loopback)
        return next(dist.rendezvous("env://", rank, size, timeout=_timeout()))
    host, port = config.env("MASTER_ADDR"), _env_int("MASTER_PORT")
    if not host:
        raise MXNetError("distributed kvstore: environment variable MASTER_ADDR is not set")
    if rank == 0:
        return host_store(host, port), rank, size
    return dist.TCPStore(host, port, is_master=False, timeout=_timeout()), rank, size


def host_store(host: str, port: int):
    """A ``torch.distributed.TCPStore`` server listening on ``host``'s address only.

    ``TCPStore(host, port, is_master=True)`` listens on every interface whatever ``host``
    is; here a socket bound to ``host`` (``127.0.0.1`` for local jobs) is handed to it
    instead. ``port`` 0 takes a free port (the store's ``port``).

    >>> store = host_store("127.0.0.1", 0)
    >>> store.host, store.port > 0
    ('127.0.0.1', True)
    """
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as err:
        raise MXNetError(f"cannot host the rendezvous store on {host}:{port}: {err}") from err
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        bound = sock.getsockname()
        store = _dist().TCPStore(bound[0], bound[1], is_master=True, wait_for_workers=False,
                                 timeout=_timeout(), master_listen_fd=sock.fileno())
    except BaseException as err:
        sock.close()
        if isinstance(err, OSError):
            raise MXNetError(f"cannot host the rendezvous store on {host}:{port}: "
                             f"{err}") from err
        raise
    sock.detach()  # the store's listener owns the descriptor from now on
    return store


def _dmlc_rendezvous() -> tuple:
    """A worker under MXNet's launch contract: a rank from the scheduler's store."""
    dist = _dist()
    role = config.env("DMLC_ROLE")
    if role != "worker":
        raise MXNetError(f"DMLC_ROLE={role}: only workers create a distributed kvstore")
    size = _env_int("DMLC_NUM_WORKER")
    store = dist.TCPStore(config.env("DMLC_PS_ROOT_URI"),
                          _env_int("DMLC_PS_ROOT_PORT"), is_master=False, timeout=_timeout())
    rank = store.add("dmlc/rank", 1) - 1
    if rank >= size:
        raise MXNetError(f"DMLC_NUM_WORKER={size} but worker number {rank + 1} arrived")
    return store, rank, size


def _warn_if_unsigned() -> None:
    if not config.get().job_secret:
        _LOG.warning("symgraph: %s is not set, so values in the rendezvous store are checked "
                     "but not authenticated (start jobs with `python -m symgraph.launch`, or "
                     "give every process of the job the same random %s)",
                     config.JOB_SECRET_ENV, config.JOB_SECRET_ENV)


def _mac(key: str, payload: str) -> str:
    secret = config.get().job_secret.encode()
    return hmac.new(secret, f"{key}\n{payload}".encode(), hashlib.sha256).hexdigest()


def _signed(key: str, payload: str) -> str:
    """``payload`` signed for ``key`` with the job's secret (a value for the store)."""
    return f"{payload}#{_mac(key, payload)}"


def _verified(key: str, raw: bytes) -> str:
    """The payload of a value :func:`_signed` for ``key``; :class:`StoreValueError` if it is
    malformed or not signed with this job's secret (signed for another key or job)."""
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise StoreValueError(f"store key {key}: the value is not ASCII text") from None
    payload, sep, mac = text.rpartition("#")
    if not sep or not hmac.compare_digest(mac, _mac(key, payload)):
        raise StoreValueError(f"store key {key}: the value is not signed with this job's "
                              f"secret: {text[:48]!r}")
    return payload


def _parse_beat(payload: str) -> tuple[float, int]:
    """``(time, collectives started)`` from a heartbeat's payload ``"<time> <count>"``."""
    fields = payload.split(" ")
    try:
        when = float(fields[0])
    except ValueError:
        when = math.nan
    if len(fields) != 2 or not fields[1].isdigit() or not math.isfinite(when):
        raise StoreValueError(f"malformed heartbeat {payload[:48]!r}: want '<time> <count>'")
    return when, int(fields[1])


def _parse_done(payload: str) -> bool:
    if payload != "done":
        raise StoreValueError(f"malformed done mark {payload[:48]!r}")
    return True


def _read(store, key: str, parse):
    """``parse`` of the signed value at ``key``; None when there is none, or when it is
    rejected (malformed or unsigned, e.g. a stranger's: logged once per key, ignored). A
    value deleted while being read counts as none; an unreachable store raises."""
    if not store.check([key]):
        return None
    try:
        return parse(_verified(key, store.get(key)))
    except StoreValueError as err:
        if key not in _REJECTED:
            _REJECTED.add(key)
            _LOG.warning("symgraph: ignoring a value in the rendezvous store: %s", err)
        return None
    except _dist().DistStoreError:  # gone between check and get: the get timed out
        return None


def _last_beat(store, r: int) -> tuple[float, int]:
    """``(time, collectives started)`` of rank ``r``'s last valid heartbeat (0, 0 if none)."""
    return _read(store, f"beat/{r}", _parse_beat) or (0.0, 0)


def _finished(store, size: int) -> int:
    """How many ranks marked themselves done with a valid ``done/<rank>``."""
    return sum(_read(store, f"done/{r}", _parse_done) is not None for r in range(size))


def _wait_for_workers(store, size: int) -> int:
    """Until every worker marked itself done (0), or none has beaten for the timeout (1).
    Only valid marks and heartbeats of ranks ``0..size-1`` count."""
    last = time.time()
    while (finished := _finished(store, size)) < size:
        newest = max(_last_beat(store, r)[0] for r in range(size))
        last = max(last, newest)
        if time.time() - last > config.get().dist_timeout:
            print(f"symgraph: no worker alive for {config.get().dist_timeout:g} s; "
                  f"{finished} of {size} finished", file=sys.stderr)
            return 1
        time.sleep(0.2)
    time.sleep(0.5)  # let servers see the count before the scheduler's store goes away
    return 0
