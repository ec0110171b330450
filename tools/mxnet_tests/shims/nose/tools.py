"""``nose.tools`` as MXNet 1.9.1's tests use it: decorators and unittest-style asserts."""
from __future__ import annotations

import functools
import unittest

import pytest

_case = unittest.TestCase("__init__")
_case.maxDiff = None

assert_raises = _case.assertRaises
assert_equal = eq_ = _case.assertEqual
assert_not_equal = _case.assertNotEqual
assert_true = ok_ = _case.assertTrue
assert_false = _case.assertFalse
assert_almost_equal = _case.assertAlmostEqual
assert_in = _case.assertIn
assert_is_none = _case.assertIsNone
assert_is_instance = _case.assertIsInstance
assert_greater = _case.assertGreater
assert_less = _case.assertLess
SkipTest = unittest.SkipTest


def make_decorator(func):
    """Copy ``func``'s name and metadata onto the decorated function."""
    def decorate(new):
        return functools.wraps(func)(new)
    return decorate


def raises(*exceptions):
    """The test passes only if it raises one of ``exceptions``."""
    def decorate(func):
        @functools.wraps(func)
        def test(*args, **kwargs):
            with pytest.raises(exceptions):
                func(*args, **kwargs)
        return test
    return decorate


def with_setup(setup=None, teardown=None):
    """Run ``setup`` before and ``teardown`` after the test."""
    def decorate(func):
        @functools.wraps(func)
        def test(*args, **kwargs):
            if setup:
                setup()
            try:
                return func(*args, **kwargs)
            finally:
                if teardown:
                    teardown()
        return test
    return decorate


def nottest(func):
    func.__test__ = False
    return func


def istest(func):
    func.__test__ = True
    return func
