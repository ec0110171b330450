"""mx.io against MXNet 1.9.1 golden batches (tests/fixtures/metric_io/generate.py)."""
import json
import os
import threading

import numpy as np
import pytest

import symgraph as mx

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "metric_io", "metric_io.json")
DATA = np.arange(14, dtype=np.float32).reshape(7, 2)
LABEL = np.arange(7, dtype=np.float32)


@pytest.fixture(scope="module")
def golden():
    with open(FIX) as f:
        return json.load(f)["io"]


def _batches(it, epochs):
    out = []
    for _ in range(epochs):
        out.append([{"data": [d.asnumpy().tolist() for d in b.data],
                     "label": [lb.asnumpy().tolist() for lb in b.label], "pad": b.pad,
                     "index": None if b.index is None else list(b.index)} for b in it])
        it.reset()
    return out


@pytest.mark.parametrize("handle,bs", [(h, b) for h in ("pad", "discard", "roll_over")
                                       for b in (3, 2, 7, 10) if not (h == "roll_over" and b > 7)])
def test_ndarrayiter_last_batch(golden, handle, bs):
    it = mx.io.NDArrayIter(DATA, LABEL, batch_size=bs, last_batch_handle=handle)
    assert _batches(it, 3) == golden[f"{handle}_{bs}"]


def test_shuffle_follows_numpy_seed(golden):
    np.random.seed(7)
    it = mx.io.NDArrayIter(DATA, LABEL, batch_size=3, shuffle=True)
    assert _batches(it, 2) == golden["shuffle_pad_3_seed7"]


@pytest.mark.parametrize("key,args", [
    ("dict_provide", ({"b": DATA, "a": DATA[:, :1]}, {"z": LABEL, "y": LABEL})),
    ("list_provide", ([DATA, DATA[:, :1]], [LABEL])),
])
def test_provide_order(golden, key, args):
    it = mx.io.NDArrayIter(*args, batch_size=4)
    assert [[repr(d) for d in it.provide_data], [repr(d) for d in it.provide_label]] == golden[key]


def test_names(golden):
    it = mx.io.NDArrayIter(DATA, batch_size=2, data_name="x", label_name="y")
    assert [[repr(d) for d in it.provide_data], [repr(d) for d in it.provide_label]] == \
        golden["names"]


@pytest.mark.parametrize("size,reset_internal", [(5, True), (2, False), (9, True)])
def test_resize_iter(golden, size, reset_internal):
    base = mx.io.NDArrayIter(DATA, LABEL, batch_size=3)
    it = mx.io.ResizeIter(base, size, reset_internal=reset_internal)
    assert _batches(it, 2) == golden[f"resize_{size}_{reset_internal}"]


def test_string_forms(golden):
    b = mx.io.DataBatch([mx.nd.zeros((2, 3)), mx.nd.zeros((2,))], [mx.nd.zeros((2,))], pad=1)
    assert [str(b), str(mx.io.DataBatch([mx.nd.zeros((1, 1))]))] == golden["databatch_str"]
    D = mx.io.DataDesc
    got = [repr(D("x", (2, 3))), repr(D("y", (4,), np.int32, "NTC")), D.get_batch_axis("TNC"),
           D.get_batch_axis(None),
           [repr(d) for d in D.get_list([("a", (1, 2)), ("b", (3,))],
                                        [("a", np.float16), ("b", np.int32)])]]
    assert got == golden["datadesc_repr"]
    name, shape = D("x", (2, 3))  # still a (name, shape) tuple
    assert (name, shape) == ("x", (2, 3))


def test_batches_do_not_alias_source():
    it = mx.io.NDArrayIter(DATA, batch_size=2)
    b = next(it)
    b.data[0][:] = -1
    it.reset()
    assert next(it).data[0].asnumpy().tolist() == [[0, 1], [2, 3]]


def test_prefetching_matches_underlying(golden):
    it = mx.io.PrefetchingIter(mx.io.NDArrayIter(DATA, LABEL, batch_size=3))
    assert it.batch_size == 3
    assert _batches(it, 2) == golden["pad_3"][:2]


def test_prefetching_two_iters_and_rename():
    a = mx.io.NDArrayIter(DATA, LABEL, batch_size=2, last_batch_handle="discard")
    b = mx.io.NDArrayIter(DATA * 2, LABEL, batch_size=2, last_batch_handle="discard")
    it = mx.io.PrefetchingIter([a, b], rename_data=[{"data": "a"}, {"data": "b"}],
                               rename_label=[{"softmax_label": "la"},
                                             {"softmax_label": "lb"}])
    assert [d.name for d in it.provide_data] == ["a", "b"]
    assert [d.name for d in it.provide_label] == ["la", "lb"]
    batches = list(it)
    assert len(batches) == 3 and len(batches[0].data) == 2
    np.testing.assert_array_equal(batches[1].data[1].asnumpy(), DATA[2:4] * 2)
    assert batches[0].provide_data[0].name == "a"


def test_prefetching_propagates_errors_and_shuts_down():
    class Boom(mx.io.DataIter):
        provide_data = [mx.io.DataDesc("data", (2, 2))]
        provide_label = []

        def next(self):
            raise KeyError("boom")

    before = threading.active_count()
    it = mx.io.PrefetchingIter(Boom())
    with pytest.raises(KeyError):
        it.next()
    assert not it.iter_next()
    it.reset()
    with pytest.raises(KeyError):
        it.next()
    del it
    assert threading.active_count() == before


def test_prefetching_reset_midway_does_not_hang():
    base = mx.io.NDArrayIter(DATA, LABEL, batch_size=1)
    it = mx.io.PrefetchingIter(base)
    for _ in range(3):
        next(it)
        it.reset()
    assert len(list(it)) == 7
    it.reset()
    next(it)
    del it  # a worker blocked on a full queue must exit


# ---------------------------------------------------------------- parts (distributed)
@pytest.mark.parametrize("n,parts", [(10, 3), (12, 4), (7, 2), (3, 3)])
def test_ndarrayiter_parts_cover_the_samples_in_equal_batch_counts(n, parts):
    data = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    label = np.arange(n, dtype=np.float32)
    seen, counts = [], set()
    for index in range(parts):
        it = mx.io.NDArrayIter(data, label, batch_size=2, num_parts=parts, part_index=index)
        batches = list(it)
        counts.add(len(batches))
        for b in batches:
            np.testing.assert_array_equal(b.data[0].asnumpy()[:, 0] / 2, b.label[0].asnumpy())
        rows = np.concatenate([b.label[0].asnumpy()[:2 - b.pad] for b in batches])
        size = -(-n // parts)
        np.testing.assert_array_equal(rows, np.arange(index * size, (index + 1) * size) % n)
        seen.extend(rows.tolist())
    part_size = -(-n // parts)
    assert counts == {-(-part_size // 2)}  # every worker makes as many batches
    assert set(seen) == set(range(n))


@pytest.mark.parametrize("kwargs,message", [
    ({"num_parts": 0}, "num_parts=0 must be a positive integer"),
    ({"num_parts": 2, "part_index": 2}, r"part_index=2 must be in \[0, num_parts=2\)"),
    ({"num_parts": 2, "part_index": -1}, r"part_index=-1 must be in"),
])
def test_parts_are_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=2, **kwargs)
    with pytest.raises(ValueError, match=message):
        mx.rnn.BucketSentenceIter([[1, 2]] * 4, 1, **kwargs)


def test_bucket_sentence_iter_parts_split_every_bucket():
    import random
    rng = np.random.RandomState(0)  # sentence i starts with token i + 1: rows are traceable
    sents = [[i + 1] + [1] * (length - 1) for i, length in enumerate(rng.choice([3, 5, 8], 50))]
    whole = mx.rnn.BucketSentenceIter(sents, 2, buckets=[3, 5, 8])
    parts = [mx.rnn.BucketSentenceIter(sents, 2, buckets=[3, 5, 8], num_parts=3, part_index=i)
             for i in range(3)]
    for b, rows in enumerate(whole.data):
        size = len(rows) // 3
        firsts = [set(p.data[b][:, 0].tolist()) for p in parts]
        assert [len(f) for f in firsts] == [size] * 3  # as many rows per worker
        assert not (firsts[0] & firsts[1]) and not (firsts[1] & firsts[2])  # disjoint
        assert set.union(*firsts) <= set(rows[:, 0].tolist())
    keys = []  # workers seeded alike take the same buckets in the same order
    for index in range(3):
        np.random.seed(1)
        random.seed(1)
        part = mx.rnn.BucketSentenceIter(sents, 2, buckets=[3, 5, 8], num_parts=3,
                                         part_index=index)
        keys.append([batch.bucket_key for batch in part])
    assert keys[0] == keys[1] == keys[2] and len(keys[0]) > 0
