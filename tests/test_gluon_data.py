"""mx.gluon.data: samplers, datasets and the DataLoader (MXNet 1.9.1's semantics, from
its gluon/data/*.py and unittest/test_gluon_data.py), checked against numpy."""
import os
import time

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import AttrError, MXNetError
from symgraph.gluon import data as gdata
from symgraph.gluon.data.dataloader import DataLoaderError


# ---------------------------------------------------------------- samplers
@pytest.mark.parametrize("mode,want", [
    ("keep", [[0, 1, 2], [3, 4, 5], [6]]),
    ("discard", [[0, 1, 2], [3, 4, 5]]),
])
def test_batch_sampler_keep_and_discard(mode, want):
    sampler = gdata.BatchSampler(gdata.SequentialSampler(7), 3, mode)
    assert list(sampler) == want and len(sampler) == len(want)


def test_batch_sampler_rollover_carries_the_remainder_into_the_next_pass():
    sampler = gdata.BatchSampler(gdata.SequentialSampler(5), 2, "rollover")
    assert list(sampler) == [[0, 1], [2, 3]]
    assert len(sampler) == 3  # the kept-back index counts toward the next pass
    assert list(sampler) == [[4, 0], [1, 2], [3, 4]]
    assert list(sampler) == [[0, 1], [2, 3]]


def test_batch_sampler_rejects_bad_arguments():
    with pytest.raises(AttrError, match="last_batch must be one of"):
        gdata.BatchSampler(gdata.SequentialSampler(3), 2, "pad")
    with pytest.raises(MXNetError, match="batch_size"):
        gdata.BatchSampler(gdata.SequentialSampler(3), 0)


def test_random_sampler_follows_numpy_seed():
    np.random.seed(3)
    first = list(gdata.RandomSampler(10))
    np.random.seed(3)
    assert list(gdata.RandomSampler(10)) == first
    assert sorted(first) == list(range(10)) and first != list(range(10))
    assert list(gdata.SequentialSampler(3, start=4)) == [4, 5, 6]


# ---------------------------------------------------------------- datasets
def test_dataset_views():
    base = gdata.SimpleDataset(list(range(100)))
    assert list(base.filter(lambda x: x % 10 == 0)) == list(range(0, 100, 10))
    # filter after transform sees transformed samples (MXNet's test_dataset_filter)
    assert list(base.transform(lambda x: x + 1).filter(lambda x: x % 10 == 0)) == \
        list(range(10, 101, 10))
    assert list(base.take(5)) == [0, 1, 2, 3, 4] and len(base.take(None)) == 100
    assert list(base.transform(lambda x: x * 10).take(3)) == [0, 10, 20]
    assert list(base.sample(gdata.SequentialSampler(3, 7))) == [7, 8, 9]
    with pytest.raises(TypeError, match="Invalid sampler"):
        base.sample([1, 2])


@pytest.mark.parametrize("length,shards", [(9, 4), (10, 3), (3, 5), (100, 7)])
def test_shard_partitions_like_array_split(length, shards):
    data = gdata.SimpleDataset(list(range(length)))
    want = [part.tolist() for part in np.array_split(np.arange(length), shards)]
    assert [list(data.shard(shards, i)) for i in range(shards)] == want
    with pytest.raises(AttrError):
        data.shard(shards, shards)


def test_transform_lazy_and_eager_and_transform_first():
    calls = []
    data = gdata.ArrayDataset([1, 2, 3], ["a", "b", "c"])

    def double(x, y):
        calls.append(x)
        return 2 * x, y
    lazy = data.transform(double)
    assert calls == [] and lazy[2] == (6, "c")
    eager = data.transform(double, lazy=False)
    assert isinstance(eager, gdata.SimpleDataset) and list(eager) == [(2, "a"), (4, "b"),
                                                                       (6, "c")]
    assert list(data.transform_first(lambda x: -x)) == [(-1, "a"), (-2, "b"), (-3, "c")]
    assert list(gdata.SimpleDataset([4]).transform_first(lambda x: x + 1)) == [5]


def test_array_dataset():
    x = np.random.uniform(size=(6, 3))
    y = mx.nd.array(np.arange(6))
    data = gdata.ArrayDataset(x, y)
    sample = data[4]
    np.testing.assert_array_equal(sample[0], x[4])
    assert isinstance(sample[1], np.float32) and sample[1] == 4  # 1-D NDArray -> numpy
    assert gdata.ArrayDataset(x)[1] is not None and len(data) == 6
    with pytest.raises(AttrError, match=r"array\[1\] has 5"):
        gdata.ArrayDataset(x, np.zeros(5))


def test_record_file_dataset_reads_records_in_index_order(tmp_path):
    rec_path, idx_path = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    rec = mx.recordio.MXIndexedRecordIO(idx_path, rec_path, "w")
    payloads = [b"x" * n for n in (3, 0, 17, 5)]
    for i, payload in enumerate(payloads):
        rec.write_idx(i, payload)
    rec.close()
    data = gdata.RecordFileDataset(rec_path)
    assert len(data) == 4 and [data[i] for i in range(4)] == payloads
    loader = gdata.DataLoader(data, batch_size=2, num_workers=2,
                              batchify_fn=lambda recs: [len(r) for r in recs])
    assert list(loader) == [[3, 0], [17, 5]]
    os.remove(idx_path)
    with pytest.raises(MXNetError, match=r"d\.idx"):
        gdata.RecordFileDataset(rec_path)


# ---------------------------------------------------------------- DataLoader
def test_loader_batches_equal_numpy_slices():
    x = np.random.uniform(size=(10, 4))
    y = np.arange(10, dtype=np.int32)
    batches = list(gdata.DataLoader(gdata.ArrayDataset(x, y), 4))
    assert [b[0].shape for b in batches] == [(4, 4), (4, 4), (2, 4)]
    np.testing.assert_allclose(np.concatenate([b[0].asnumpy() for b in batches]), x)
    assert batches[0][1].dtype == np.int32 and batches[0][0].dtype == np.float64
    assert len(gdata.DataLoader(x, 4, last_batch="discard")) == 2
    np.random.seed(0)
    shuffled = np.concatenate([b.asnumpy() for b in gdata.DataLoader(y, 3, shuffle=True)])
    assert sorted(shuffled.tolist()) == list(range(10)) and shuffled.tolist() != list(range(10))


def test_loader_argument_errors():
    with pytest.raises(AttrError, match="batch_size must be specified"):
        gdata.DataLoader([1, 2])
    with pytest.raises(AttrError, match="shuffle must not be specified"):
        gdata.DataLoader([1, 2], 1, shuffle=True, sampler=gdata.SequentialSampler(2))
    with pytest.raises(AttrError, match="must not be specified if batch_sampler"):
        gdata.DataLoader([1, 2], 1, batch_sampler=gdata.BatchSampler(
            gdata.SequentialSampler(2), 1))
    with pytest.raises(AttrError, match="timeout"):
        gdata.DataLoader([1, 2], 1, timeout=0)


def test_default_batchify_nested_tuples_and_ndarrays():
    samples = [(mx.nd.full((2,), i), (i, np.full(3, i, np.float32))) for i in range(3)]
    data, (ints, arrays) = gdata.default_batchify_fn(samples)
    np.testing.assert_array_equal(data.asnumpy(), np.repeat(np.arange(3.0), 2).reshape(3, 2))
    assert ints.asnumpy().tolist() == [0, 1, 2]
    np.testing.assert_array_equal(arrays.asnumpy(), np.repeat(np.arange(3.0), 3).reshape(3, 3))
    shared = gdata.default_mp_batchify_fn(samples)
    assert shared[0].context == mx.Context("cpu_shared", 0)
    np.testing.assert_array_equal(shared[1][1].asnumpy(), arrays.asnumpy())


def test_pin_memory_context():
    loader = gdata.DataLoader(np.ones((4, 2)), 2, pin_memory=True, pin_device_id=0)
    assert all(b.context == mx.cpu_pinned(0) for b in loader)
    assert next(iter(gdata.DataLoader(np.ones((4, 2)), 2))).context == mx.cpu(0)


class _Indexed(gdata.Dataset):
    """Sample i is full((3,), i); sleeps, fails or exits at chosen indices."""

    def __init__(self, length=12, fail_at=None, exit_at=None, sleep=0.0):
        self.length, self.fail_at, self.exit_at, self.sleep = length, fail_at, exit_at, sleep

    def __len__(self):
        return self.length

    def __getitem__(self, idx):
        if idx == self.fail_at:
            raise ValueError(f"bad sample {idx}")
        if idx == self.exit_at:
            os._exit(3)
        time.sleep(self.sleep)
        return mx.nd.full((3,), idx)


@pytest.mark.parametrize("thread_pool", [True, False])
def test_workers_deliver_batches_in_order(thread_pool):
    loader = gdata.DataLoader(_Indexed(), batch_size=2, num_workers=2,
                              thread_pool=thread_pool, prefetch=3)
    for epoch in range(2):
        got = [b.asnumpy()[:, 0].tolist() for b in loader]
        assert got == [[2.0 * i, 2.0 * i + 1] for i in range(6)], epoch


def test_process_workers_hand_over_batches_in_shared_memory():
    batch = next(iter(gdata.DataLoader(_Indexed(), batch_size=4, num_workers=1)))
    assert batch._t.is_shared() and batch.context == mx.Context("cpu_shared", 0)
    np.testing.assert_array_equal(batch.asnumpy()[:, 1], [0, 1, 2, 3])


@pytest.mark.parametrize("thread_pool", [True, False])
def test_worker_exception_surfaces_in_parent(thread_pool):
    loader = gdata.DataLoader(_Indexed(fail_at=5), batch_size=2, num_workers=2,
                              thread_pool=thread_pool)
    with pytest.raises(ValueError, match="bad sample 5"):
        list(loader)


def test_dead_worker_and_timeout_raise_instead_of_hanging():
    loader = gdata.DataLoader(_Indexed(exit_at=3), batch_size=2, num_workers=1, timeout=20)
    with pytest.raises(DataLoaderError, match="exited unexpectedly"):
        list(loader)
    for thread_pool in (True, False):
        slow = gdata.DataLoader(_Indexed(length=2, sleep=1.0), batch_size=1, num_workers=1,
                                thread_pool=thread_pool, timeout=0.3)
        with pytest.raises(DataLoaderError, match="timed out after 0.3"):
            list(slow)


def test_auto_reload_prefetches_and_clean_drops():
    loader = gdata.DataLoader(np.arange(4), 2, num_workers=1, thread_pool=True,
                              auto_reload=True)
    assert loader._iter is not None  # prefetch started at construction
    assert [b.asnumpy().tolist() for b in loader] == [[0, 1], [2, 3]]
    assert loader._iter is not None  # the next pass is already on its way
    loader.clean()
    assert loader._iter is None and len(list(loader)) == 2


class _Draws(gdata.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, idx):
        return mx.nd.random.uniform(shape=(2,))


def test_process_workers_draw_different_random_numbers():
    batches = [b.asnumpy() for b in gdata.DataLoader(_Draws(), 1, num_workers=2)]
    # batches 0 and 1 are the first draws of workers 0 and 1: forked generators would agree
    assert not np.array_equal(batches[0], batches[1])
    assert not np.array_equal(batches[0], batches[2])


def test_batchify_of_unequal_shapes_raises_a_typed_error():
    for samples in ([mx.nd.ones((2,)), mx.nd.ones((3,))], [np.ones(2), np.ones(3)]):
        for fn in (gdata.default_batchify_fn, gdata.default_mp_batchify_fn):
            with pytest.raises(MXNetError):
                fn(samples)
    with pytest.raises(MXNetError, match=r"different shapes \[\(2,\), \(3,\)\]"):
        gdata.default_batchify_fn([np.ones(2), np.ones(3)])
