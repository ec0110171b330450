"""``mx.gluon.utils`` against MXNet 1.9.1 golden records (cases ``utils_*`` of
``tests/fixtures/gluon/generate_parameter.py``), plus symgraph's refusal to download."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from tests.test_gluon_parameter import GEN, check_case

UTILS_CASES = [n for n in GEN.CASES if n.startswith("utils_")]


@pytest.mark.parametrize("name", UTILS_CASES)
def test_matches_mxnet(name):
    check_case(name)


def test_axis0_slices_are_views_like_mxnet():
    # MXNet slices axis 0 with ``data[a:b]``, a view sharing memory with ``data``
    x = mx.nd.zeros((4, 2))
    first, _ = mx.gluon.utils.split_data(x, 2)
    first[:] = 1
    np.testing.assert_array_equal(x.asnumpy()[:2], first.asnumpy())


def test_download_refuses_without_file(tmp_path):
    target = tmp_path / "model.params"
    with pytest.raises(mx.gluon.utils.DownloadError, match="docs/compat.md"):
        mx.gluon.utils.download("https://example.invalid/model.params", path=str(target))
    target.write_bytes(b"abc")
    assert mx.gluon.utils.download("https://example.invalid/model.params",
                                   path=str(tmp_path)) == str(target)
    with pytest.raises(mx.gluon.utils.DownloadError, match="example.invalid"):
        mx.gluon.utils.download("https://example.invalid/model.params", path=str(target),
                                overwrite=True)
