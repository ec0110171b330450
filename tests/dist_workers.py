"""Worker bodies for the distributed tests: ``python -m tests.dist_workers SCENARIO OUT``.

Each scenario runs in every worker process (launched by ``tests/dist_harness.py`` with
PyTorch's or MXNet's environment) and returns a JSON-able dict, written to ``OUT.<rank>``.
"""
from __future__ import annotations

import json
import os
import sys
import time
import warnings

import numpy as np


def _kv(mx, name="dist_sync"):
    return mx.kv.create(name)


def semantics(mx) -> dict:
    kv = _kv(mx)
    r, n = kv.rank, kv.num_workers
    kv.init(["a", "b"], [mx.nd.ones((2, 3)) * (r + 1), mx.nd.ones((5,)) * (10 + r)])
    a, b = mx.nd.zeros((2, 3)), mx.nd.zeros((5,))
    kv.pull(["a", "b"], out=[a, b])
    got = {"rank": r, "n": n, "init_a": a.asnumpy().tolist(), "init_b": b.asnumpy().tolist()}
    kv.push(["a", "b"], [[mx.nd.ones((2, 3)) * (r + 1)] * 2, mx.nd.arange(5) * r])
    kv.pull(["a", "b"], out=[a, b])
    got["push_a"], got["push_b"] = a.asnumpy().tolist(), b.asnumpy().tolist()
    grads = [mx.nd.ones((2, 3)) * (r + 1), mx.nd.ones((2, 3))]
    kv.pushpull("a", grads)
    got["pushpull"] = [g.asnumpy().tolist() for g in grads]
    outs = [mx.nd.zeros((3,)), mx.nd.zeros((3,))]
    kv.broadcast("c", mx.nd.ones((3,)) * (r + 7), out=outs)
    got["broadcast"] = [o.asnumpy().tolist() for o in outs]
    try:  # every worker makes the same mistake: all raise before the collective
        kv.push("a", mx.nd.ones((3, 2)))
    except mx.base.ShapeError as err:
        got["bad_shape"] = str(err)
    kv.barrier()
    return got


def optimizer(mx) -> dict:
    kv = _kv(mx)
    r = kv.rank
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=0.01))
    rng = np.random.RandomState(0)
    kv.init(0, mx.nd.array(rng.uniform(-1, 1, (4, 3)) + r))  # rank 0's value wins
    out = mx.nd.zeros((4, 3))
    for step in range(3):
        g = np.random.RandomState(100 * step + r).uniform(-1, 1, (4, 3)).astype(np.float32)
        kv.push(0, [mx.nd.array(g), mx.nd.array(g * 0.5)])
        kv.pull(0, out=out)
    return {"rank": r, "weight": out.asnumpy().tolist(),
            "bytes": out.asnumpy().tobytes().hex()}


def compression(mx) -> dict:
    kv = _kv(mx)
    r = kv.rank
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init("w", mx.nd.zeros((6,)))
    out, seen = mx.nd.zeros((6,)), []
    for step in range(3):
        g = np.random.RandomState(10 * step + r).uniform(-1, 1, 6).astype(np.float32)
        kv.push("w", mx.nd.array(g))
        kv.pull("w", out=out)
        seen.append(out.asnumpy().tolist())
    return {"rank": r, "seen": seen}


def async_average(mx) -> dict:
    kv = _kv(mx, "dist_async")
    r = kv.rank
    kv.init(0, mx.nd.zeros((2,)))
    out, seen = mx.nd.zeros((2,)), []
    for _ in range(2):
        kv.push(0, mx.nd.ones((2,)) * (r + 1))
        kv.pull(0, out=out)
        seen.append(out.asnumpy().tolist())
    return {"rank": r, "seen": seen}


VOCAB, HIDDEN, BATCH, BUCKETS = 12, 8, 4, [4, 7]


def bucketing_corpus() -> list:
    rng = np.random.RandomState(5)
    return [list(rng.randint(1, VOCAB, size=rng.randint(2, BUCKETS[-1] + 1)))
            for _ in range(60)]


def bucketing_model(mx, batches: list):
    """A bound LSTM language model (BucketingModule) with fixed starting parameters."""
    cell = mx.rnn.FusedRNNCell(HIDDEN, num_layers=1, mode="lstm", prefix="lstm_")

    def sym_gen(seq_len):
        embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=VOCAB, output_dim=HIDDEN,
                                 name="embed")
        cell.reset()
        with warnings.catch_warnings():  # NTC is slower than TNC for a fused cell: fine here
            warnings.simplefilter("ignore")
            out, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True, layout="NTC")
        pred = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, HIDDEN)),
                                     num_hidden=VOCAB, name="pred")
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        return (mx.sym.SoftmaxOutput(pred, label, use_ignore=True, ignore_label=0,
                                     name="softmax"), ("data",), ("softmax_label",))
    it = ListIter(mx, batches)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=it.default_bucket_key)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    args, auxs = mod.get_params()
    rng = np.random.RandomState(11)
    mod.set_params({k: mx.nd.array(rng.uniform(-0.3, 0.3, args[k].shape))
                    for k in sorted(args)}, auxs)
    return mod, it


class ListIter:
    """Batches ``[(bucket_key, data, label)]`` (NT layout) as a bucketing data iterator."""

    def __init__(self, mx, batches: list):
        self.mx, self.batches, self.cursor = mx, batches, 0
        self.default_bucket_key = max(BUCKETS)
        width = len(batches[0][1])
        self.provide_data = [mx.io.DataDesc("data", (width, self.default_bucket_key))]
        self.provide_label = [mx.io.DataDesc("softmax_label", (width, self.default_bucket_key))]

    def __iter__(self):
        return self

    def reset(self) -> None:
        self.cursor = 0

    def __next__(self):
        if self.cursor == len(self.batches):
            raise StopIteration
        key, data, label = self.batches[self.cursor]
        self.cursor += 1
        mx = self.mx
        data, label = mx.nd.array(data), mx.nd.array(label)
        return mx.io.DataBatch([data], [label], pad=0, bucket_key=key,
                               provide_data=[mx.io.DataDesc("data", data.shape)],
                               provide_label=[mx.io.DataDesc("softmax_label", label.shape)])

    next = __next__


def train_bucketing(mx, batches: list, kvstore) -> dict:
    mod, it = bucketing_model(mx, batches)
    mod.fit(it, kvstore=kvstore, optimizer="sgd", num_epoch=1,
            optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    return {k: v.asnumpy().tolist() for k, v in mod.get_params()[0].items()}


def bucketing(mx) -> dict:
    """BucketingModule.fit(kvstore='dist_sync') on this worker's part of the corpus."""
    import random
    kv = _kv(mx)
    random.seed(0)  # every worker takes the buckets in the same order
    np.random.seed(0)
    it = mx.rnn.BucketSentenceIter(bucketing_corpus(), BATCH, buckets=list(BUCKETS),
                                   invalid_label=0, num_parts=kv.num_workers,
                                   part_index=kv.rank)
    batches = [(b.bucket_key, b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist())
               for b in it]
    return {"rank": kv.rank, "batches": batches,
            "params": train_bucketing(mx, batches, kv)}


def device_stores(mx) -> dict:
    """``dist_sync`` (merged on the CPU: gloo) and ``dist_device_sync`` (merged on the
    device: NCCL with CUDA) pushing from the test device (``SYMGRAPH_TEST_DEVICE``)."""
    from tests import device
    ctx = device.context()
    got = {}
    for name in ("dist_sync", "dist_device_sync"):
        kv = _kv(mx, name)
        r, n = kv.rank, kv.num_workers
        kv.init("w", mx.nd.zeros((3,), ctx=ctx))
        out = mx.nd.zeros((3,), ctx=ctx)
        kv.pushpull("w", [mx.nd.ones((3,), ctx=ctx) * (r + 1)] * 2, out=out)
        kv.barrier()
        got[name] = {"sum": out.asnumpy().tolist(), "expected": [float(n * (n + 1))] * 3,
                     "store_device": str(kv._store["w"].device)}
    got["rank"] = r
    return got


def lost_worker(mx) -> dict:
    kv = _kv(mx)
    r = kv.rank
    kv.init(0, mx.nd.zeros((2,)))
    if r == kv.num_workers - 1:
        mode = os.environ.get("LOST_MODE", "die")
        if mode == "die":
            os._exit(3)
        time.sleep(3600)  # hang: the test kills it
    start = time.time()
    try:
        kv.push(0, mx.nd.ones((2,)))
    except mx.MXNetError as err:
        return {"rank": r, "error": type(err).__name__, "message": str(err),
                "seconds": time.time() - start}
    return {"rank": r, "error": None}


# ---------------------------------------------------------------- tests/test_reliability_dist.py

def _proc_address(hexaddr: str) -> str:
    """An address of /proc/net/tcp{,6} ("0100007F", 32 hex digits for IPv6) as text."""
    import socket
    raw = bytes.fromhex(hexaddr)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # host-order words
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words)


def listening_sockets(pids: list[int]) -> list[list]:
    """``[address, port, pid]`` of every TCP socket in LISTEN state that ``pids`` hold."""
    owner = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                owner[link[8:-1]] = pid
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            rows = [line.split() for line in f.read().splitlines()[1:]]
        for row in rows:
            if row[3] == "0A" and row[9] in owner:  # 0A: LISTEN
                addr, port = row[1].split(":")
                found.append([_proc_address(addr), int(port, 16), owner[row[9]]])
    return found


def _job_pids() -> list[int]:
    """This worker's parent (the launcher, or the test) and every child of that parent."""
    parent, pids = os.getppid(), [os.getppid()]
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if entry.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            pids.append(int(entry))
    return pids


def listening(mx) -> dict:
    """The TCP sockets this job listens on, once every worker joined the process group."""
    kv = _kv(mx)
    kv.init("w", mx.nd.zeros((2,)))
    kv.barrier()
    found = listening_sockets(_job_pids())
    kv.barrier()  # the other workers' sockets stay open until everyone looked
    return {"rank": kv.rank, "listening": found}


def _disagreeing_calls(mx) -> dict:
    """Ways for two workers to disagree: ``case(kv, rank)`` makes the calls."""
    def key_order(kv, r):  # rank 0 pushes keys a, b; rank 1 pushes b, a
        pairs = [("a", mx.nd.arange(3) + 10 * r), ("b", mx.nd.arange(4) + 10 * r)]
        keys, values = zip(*(pairs if r == 0 else pairs[::-1]))
        kv.push(list(keys), list(values))

    def extra_push(kv, r):  # rank 1 pushes key a once more; rank 0 goes on to a barrier
        kv.push("a", mx.nd.ones((3,)))
        if r == 1:
            kv.push("a", mx.nd.ones((3,)))
        kv.barrier()

    def dtype_push(kv, r):  # rank 0 pushes key a as float16, rank 1 as float32
        kv.push("a", mx.nd.ones((3,), dtype="float16" if r == 0 else "float32"))
    return {"key_order": key_order, "extra_push": extra_push, "dtype_push": dtype_push}


def disagree(mx) -> dict:
    """Each disagreeing call in turn: the error it raised (None if none), then whether the
    process group still works (a barrier and a push that agree)."""
    kv = _kv(mx)
    kv.init(["a", "b"], [mx.nd.zeros((3,)), mx.nd.zeros((4,))])
    got = {"rank": kv.rank}
    for name, case in _disagreeing_calls(mx).items():
        try:
            case(kv, kv.rank)
            got[name] = {"error": None}
        except mx.MXNetError as err:
            got[name] = {"error": type(err).__name__, "message": str(err)}
    kv.barrier()
    kv.push("b", mx.nd.ones((4,)))
    out = mx.nd.zeros((4,))
    kv.pull("b", out=out)
    got["after"] = out.asnumpy().tolist()
    return got


def wait_for_go(mx) -> dict:
    """Join and record the job's listening sockets, then wait (at most 60 s) for the file
    ``$GO_FILE`` before a push and a pull."""
    kv = _kv(mx)
    kv.init("w", mx.nd.zeros((2,)))
    kv.barrier()
    found = listening_sockets(_job_pids())
    deadline = time.time() + 60
    while not os.path.exists(os.environ["GO_FILE"]) and time.time() < deadline:
        time.sleep(0.05)
    kv.push("w", mx.nd.ones((2,)))
    out = mx.nd.zeros((2,))
    kv.pull("w", out=out)
    kv.barrier()
    return {"rank": kv.rank, "sum": out.asnumpy().tolist(), "listening": found}


def write_result(got: dict, out: str) -> None:
    """A worker's result as ``<out>.<rank>`` (JSON, written atomically)."""
    path = f"{out}.{got['rank']}"
    with open(path + ".tmp", "w") as f:
        json.dump(got, f)
    os.replace(path + ".tmp", path)


def main() -> None:
    scenario, out = sys.argv[1], sys.argv[2]
    import symgraph as mx
    write_result(globals()[scenario](mx), out)


if __name__ == "__main__":
    main()
