"""MXNet's Python-level contrib helpers, written once for both front ends: they use only
operators and arithmetic that NDArray and Symbol share."""
from __future__ import annotations

import math
from collections.abc import Callable


def isnan(data):
    """1 where ``data`` is NaN, else 0 (``data != data``)."""
    return data != data


def isinf(data):
    """1 where ``data`` is +-inf, else 0."""
    return data.abs() == float("inf")


def isfinite(data):
    """1 where ``data`` is neither NaN nor +-inf, else 0."""
    return (data == data) * (data.abs() != float("inf"))


def rand_zipfian(uniform: Callable, true_classes, num_sampled: int, range_max: int, **kwargs):
    """Draw ``num_sampled`` classes from the approximately log-uniform (Zipfian)
    distribution over ``[0, range_max)`` with the front end's ``uniform``; returns the
    samples (int64), the expected counts of ``true_classes`` and of the samples (MXNet's
    candidate sampler for sampled softmax)."""
    log_range = math.log(range_max + 1)
    draws = uniform(0, log_range, shape=(num_sampled,), dtype="float64", **kwargs)
    sampled = (draws.exp() - 1).astype("int64") % range_max

    def expected(classes):
        c = classes.astype("float64")
        return ((c + 2.0) / (c + 1.0)).log() / log_range * num_sampled

    return sampled, expected(true_classes), expected(sampled)
