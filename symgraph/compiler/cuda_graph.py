"""CUDA-graph capture of a bound plan's step lists.

On a CUDA context, the first calls of a step list run eagerly on a side stream (warm-up:
kernels compile, autotune and allocate), then one call is captured into a
``torch.cuda.CUDAGraph``; every later call replays it: one launch for the whole forward or
backward instead of one per kernel. Shapes are fixed per plan, so a shape change means a
new executor (``reshape``/``simple_bind``) and a new capture. A plan that draws random
numbers on the host (Dropout) or synchronises with the host is not captured: it keeps
running eagerly, with one warning.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

from .. import config
from ..kernels.runtime import held_meta

# eager calls before the capture: the first compiles and autotunes the kernels and builds
# their launch metadata, so the second call of a step list is captured (a bucket seen twice
# replays from its third call; a training step's forward and backward are captured together)
WARMUP_CALLS = 1


def wanted(device: torch.device, steps: list) -> bool:
    """Whether this step list should be captured on ``device``."""
    if device.type != "cuda" or not config.get().cuda_graphs or not steps:
        return False
    return not any(step[-1].op is not None and step[-1].op.draws_random(step[1])
                   for step in steps)


class CudaBackend:
    """What :class:`GraphedCall` asks of CUDA (tests pass a fake with the same methods to
    check the capture policy on a CPU)."""

    @staticmethod
    def graph():
        return torch.cuda.CUDAGraph()

    @staticmethod
    def capturing(graph, pool):
        return torch.cuda.graph(graph, pool=pool)

    @staticmethod
    def run_aside(body: Callable[[], None]) -> None:
        """``body()`` on a side stream, as warm-up calls before a capture must run."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            body()
        torch.cuda.current_stream().wait_stream(side)

    @staticmethod
    def synchronize() -> None:
        torch.cuda.synchronize()


class GraphedCall:
    """Runs ``body()`` eagerly for the warm-up calls, then captures and replays it."""

    def __init__(self, body: Callable[[], None], name: str, pool=None, backend=CudaBackend):
        self.body = body
        self.name = name
        self.pool = pool  # torch.cuda.graph_pool_handle() shared with other captures, or None
        self.backend = backend
        self.calls = 0
        self.graph = None  # the captured torch.cuda.CUDAGraph
        self.failed = False
        self.held: list = []  # launch metadata the graph reads

    def __call__(self) -> None:
        if self.graph is not None:
            self.graph.replay()
            return
        if self.failed or self.calls < WARMUP_CALLS:
            self._eager()
            return
        self._capture()

    def _eager(self) -> None:
        self.calls += 1
        if self.failed:
            self.body()
            return
        self.backend.run_aside(self.body)

    def _capture(self) -> None:
        graph = self.backend.graph()
        try:
            with held_meta() as self.held, self.backend.capturing(graph, self.pool):
                self.body()
        except Exception as err:  # e.g. a host sync inside an op
            warnings.warn(f"CUDA graph capture of {self.name} failed ({type(err).__name__}: "
                          f"{err}); running it eagerly", RuntimeWarning, stacklevel=3)
            self.failed = True
            self.held = []
            self.backend.synchronize()
            self.body()
            return
        self.graph = graph
        graph.replay()  # capture records without executing: run the captured work once
