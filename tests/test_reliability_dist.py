"""Reliability of the distributed stores (issue #16, items 5 and 6): the rendezvous stores
listen on loopback only for local jobs, values in them are signed with the job's secret and
parsed strictly (a stranger's heartbeat or ``done`` mark neither crashes nor stops the
scheduler), and workers that disagree on a collective (key order, an extra push against a
barrier, float16 against float32) raise ``CollectiveMismatch`` on every rank, naming the
rank and the key, instead of diverging, pairing the wrong collectives or aborting in gloo.
2 worker processes each, bounded in time (``tests/dist_harness.py``)."""
from __future__ import annotations

import datetime
import ipaddress
import json
import logging
import os
import socket
import subprocess
import sys
import time

import pytest

from symgraph import config, launch
from symgraph.distributed import rendezvous
from tests import dist_harness, dist_workers

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads listening sockets from /proc")


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def _other_local_address() -> str | None:
    """A non-loopback IPv4 address of this machine (None without one); sends nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.254", 9))
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if _is_loopback(address) else address


def _ok(result: dict, n: int) -> dict:
    assert not result["timed_out"], result
    assert result["codes"] == [0] * len(result["codes"]), result["codes"]
    assert sorted(result["ranks"]) == list(range(n)), result["ranks"].keys()
    return result["ranks"]


# ---------------------------------------------------------------- item 5: the stores

def test_host_store_listens_on_the_given_address_only():
    store = rendezvous.host_store("127.0.0.1", 0)
    found = [addr for addr, port, _ in dist_workers.listening_sockets([os.getpid()])
             if port == store.port]
    assert found == ["127.0.0.1"]
    other = _other_local_address()
    if other is not None:  # reachable through loopback only
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((other, store.port), timeout=5).close()


def _listening_launched(style: str, tmp_path) -> dict:
    if style == "env":
        return _ok(dist_harness.run("listening", 2, tmp_path), 2)
    proc = subprocess.run(
        [sys.executable, "-m", "symgraph.launch", "-n", "2", "tests/dist_workers.py",
         "listening", str(tmp_path / "listening")], cwd=dist_harness.ROOT,
        env=dist_harness._env({}), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {r: json.loads((tmp_path / f"listening.{r}").read_text()) for r in range(2)}


def _assert_loopback_only(ranks: dict) -> None:
    for got in ranks.values():  # the sockets of the job's processes, not of this test's
        found = [s for s in got["listening"] if s[2] != os.getpid()]
        assert found, got  # at least the rendezvous store
        assert [s for s in found if not _is_loopback(s[0])] == [], found


@pytest.mark.parametrize("style", ["torchrun", "env"])
def test_local_jobs_listen_on_loopback_only(style, tmp_path):
    """Every socket the job listens on (launcher, workers: the stores and gloo's) is bound
    to a loopback address, never to all interfaces (MXNet's launch contract: below)."""
    _assert_loopback_only(_listening_launched(style, tmp_path))


@pytest.fixture(scope="module")
def stranger_job(tmp_path_factory) -> dict:
    """A job under MXNet's launch contract (scheduler, server, 2 workers) while a stranger
    on the scheduler's port adds to the old ``done`` counter, writes ``done`` marks signed
    without the job's secret and malformed heartbeats; then the workers finish."""
    import torch.distributed as dist
    tmp = tmp_path_factory.mktemp("stranger")
    port, go = launch.free_port(), tmp / "go"
    procs, roles = dist_harness.start(
        [sys.executable, "-m", "tests.dist_workers", "wait_for_go", str(tmp / "out")], 2,
        dmlc=True, env={"GO_FILE": str(go)}, port=port)
    try:
        stranger = dist.TCPStore("127.0.0.1", port, is_master=False,
                                 timeout=datetime.timedelta(seconds=60))
        deadline = time.time() + 60
        while not stranger.check(["symgraph/beat/0", "symgraph/beat/1"]):
            assert time.time() < deadline, "the workers never joined"
            time.sleep(0.05)
        stranger.add("symgraph/done", 10)
        for r in range(2):  # what a stranger can sign: no secret
            with config.override(job_secret=""):
                stranger.set(f"symgraph/done/{r}", rendezvous._signed(f"done/{r}", "done"))
        for _ in range(40):
            stranger.set("symgraph/beat/0", b"\xff\x00 garbage")
            stranger.set("symgraph/beat/1", "1.5")
            time.sleep(0.025)
        alive = procs[roles.index("scheduler")].poll() is None
    finally:
        go.touch()
        codes, timed_out = dist_harness.wait(procs, 60)
    ranks = {r: json.loads((tmp / f"out.{r}").read_text())
             for r in range(2) if (tmp / f"out.{r}").exists()}
    return {"scheduler_alive": alive, "codes": codes, "roles": roles,
            "timed_out": timed_out, "ranks": ranks}


def test_mxnet_launch_contract_listens_on_loopback_only(stranger_job):
    _assert_loopback_only(_ok(stranger_job, 2))


def test_a_stranger_on_the_scheduler_port_does_not_stop_or_crash_the_job(stranger_job):
    assert stranger_job["scheduler_alive"], "the stranger stopped or crashed the scheduler"
    for got in _ok(stranger_job, 2).values():  # every process (scheduler too) exited 0
        assert got["sum"] == [2.0, 2.0]


def test_store_values_are_signed_for_their_key_and_job():
    with config.override(job_secret="job-a"):
        value = rendezvous._signed("beat/0", "12.5 3").encode()
        assert rendezvous._verified("beat/0", value) == "12.5 3"
        for key, raw in [("beat/1", value),  # signed for another key
                         ("beat/0", b"12.5 3"),  # unsigned
                         ("beat/0", b"\xff\xfe garbage")]:
            with pytest.raises(rendezvous.StoreValueError, match=key):
                rendezvous._verified(key, raw)
    with config.override(job_secret="job-b"), pytest.raises(rendezvous.StoreValueError):
        rendezvous._verified("beat/0", value)  # another job's
    for payload in ["12.5", "12.5 -3", "nan 3", "1e400 3", "x 3", "12.5 3 4"]:
        with pytest.raises(rendezvous.StoreValueError, match="malformed heartbeat"):
            rendezvous._parse_beat(payload)


def test_strangers_heartbeats_and_done_marks_neither_crash_nor_stop_the_scheduler(
        monkeypatch, caplog):
    import torch.distributed as dist
    monkeypatch.setattr(rendezvous, "_REJECTED", set())
    store = dist.PrefixStore("symgraph", dist.HashStore())
    store.set("beat/0", b"\xff\x00 garbage")
    store.set("beat/1", "1e400 7")
    store.add("done", 5)  # the old shared counter
    store.set("done/0", "done")
    with config.override(job_secret="other job"):
        store.set("done/1", rendezvous._signed("done/1", "done"))
    with config.override(job_secret="job", dist_timeout=1.0), caplog.at_level(logging.WARNING):
        start = time.time()
        assert rendezvous._wait_for_workers(store, 2) == 1  # no valid worker ever beat
        assert time.time() - start >= 1.0  # it waited for the real workers, then gave up
        for r in range(2):
            store.set(f"done/{r}", rendezvous._signed(f"done/{r}", "done"))
        assert rendezvous._wait_for_workers(store, 2) == 0
    logged = caplog.text
    for key in ("beat/0", "beat/1", "done/0", "done/1"):
        assert f"store key {key}:" in logged, logged


# ---------------------------------------------------------------- item 6: agreement

@pytest.fixture(scope="module")
def disagreements(tmp_path_factory) -> dict:
    """Both ranks' results of ``tests.dist_workers.disagree``: no abort, no hang."""
    tmp = tmp_path_factory.mktemp("disagree")
    return _ok(dist_harness.run("disagree", 2, tmp, timeout=90), 2)


def _messages(disagreements: dict, case: str) -> list[str]:
    """Both ranks' CollectiveMismatch messages for ``case`` (none passed silently)."""
    for got in disagreements.values():
        assert got[case]["error"] == "CollectiveMismatch", got[case]
    return [disagreements[r][case]["message"] for r in range(2)]


def test_keys_pushed_in_a_different_order_raise_naming_rank_and_key(disagreements):
    for message in _messages(disagreements, "key_order"):
        assert ("kvstore push (collective #3): workers disagree: rank 1 has key 'b' at "
                "position 0 where rank 0 has key 'a'") in message, message


def test_an_extra_push_does_not_pair_with_a_barrier(disagreements):
    for message in _messages(disagreements, "extra_push"):
        assert "rank 1 is in kvstore push of key(s) 'a' where rank 0 is in barrier" in message


def test_float16_against_float32_raises_on_both_ranks(disagreements):
    for message in _messages(disagreements, "dtype_push"):
        assert ("rank 1 has key 'a' with shape (3,), dtype float32 on cpu where rank 0 has "
                "shape (3,), dtype float16 on cpu") in message, message


def test_workers_go_on_after_a_disagreement(disagreements):
    """Every worker raised at the same collective, so the process group still pairs
    collectives right: a barrier and a push that agree then sum over both workers."""
    for got in disagreements.values():
        assert got["after"] == [2.0] * 4, got
