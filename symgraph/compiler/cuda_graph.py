"""CUDA-graph capture of a bound plan's step lists.

On a CUDA context, the first calls of a step list run eagerly on a side stream (warm-up:
kernels compile, autotune and allocate), then one call is captured into a
``torch.cuda.CUDAGraph``; every later call replays it: one launch for the whole forward or
backward instead of one per kernel. Shapes are fixed per plan, so a shape change means a
new executor (``reshape``/``simple_bind``) and a new capture. Random draws are captured
where the op draws its seed on the device (``OpDef.random == "device"``: Dropout, RReLU,
the samplers; each replay draws anew); a plan with an op that draws through the host is
not captured, and one that synchronises with the host fails its capture and keeps running
eagerly, with one warning.

An executor's step lists run through one :class:`StepCalls`, which pairs each backward
with the forward whose values it reads (a backward is captured and replayed only right
after its forward ran as its own graph) and lets the executor release intermediates while
its graphs stay: see :meth:`StepCalls.release`.
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
    return not any(step[-1].op is not None and step[-1].op.draws_on_host(step[1])
                   for step in steps)


def _register_generators(graph) -> None:
    """Register symgraph's CUDA generators of the current device with ``graph``: random
    draws inside the capture (``ops.base.draw_seed``) then advance at every replay. Older
    torch requires it for a generator other than the default one; newer torch registers
    generators itself and keeps the call as a deprecated no-op."""
    register = getattr(graph, "register_generator_state", None)
    if register is None:
        return
    from .. import random as _random
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for gen in _random.cuda_generators(torch.cuda.current_device()):
            register(gen)


class CudaBackend:
    """What :class:`GraphedCall` asks of CUDA (tests pass a fake with the same methods to
    check the capture policy on a CPU)."""

    @staticmethod
    def graph():
        return torch.cuda.CUDAGraph()

    @staticmethod
    def capturing(graph, pool):
        _register_generators(graph)
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

    def __init__(self, body: Callable[[], None], name: str, pool=None, backend=None):
        self.body = body
        self.name = name
        self.pool = pool  # torch.cuda.graph_pool_handle() shared with other captures, or None
        self.backend = backend if backend is not None else CudaBackend
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

    def reset(self, failed: bool = False) -> None:
        """Forget the captured graph: the next call captures again (or, ``failed``, every
        later call runs eagerly)."""
        self.graph, self.held = None, []
        self.failed = self.failed or failed

    def run_eagerly(self) -> None:
        """One eager call (a warm-up call if captures are still to come), never captured."""
        self._eager()

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


class StepCalls:
    """An executor's step-list runners, keyed as the executor runs them, and the rules that
    keep captured graphs and the executor's ``values`` list in agreement.

    Keys: a forward's is ``("forward", is_train, train_steps)``; a backward's is
    ``("backward", is_train, forward key)``, naming the forward whose values it reads
    (``None`` after a forward run eagerly: monitored, profiled, or not captured). A graph
    reads and writes fixed addresses, so:

    - a backward is captured, and replayed, only right after its forward ran as its graph
      (the pair shares addresses); after any other forward it runs eagerly;
    - a capture leaves the values it made in ``values``; the forward's ``snapshots`` entry
      remembers them, and a replay after another forward of the same executor (an
      evaluation forward between training steps) points ``values`` back at them;
    - :meth:`release` drops the references to intermediate values (not ``keep``: outputs,
      arguments, head gradients) while the graphs stay: on CUDA their blocks go back to the
      graph memory pool, where captures of executors sharing it (the buckets of one
      ``BucketArena``) reuse them. Replays then write over memory other graphs also use:
      only one executor of a pool may be active between releases, and a forward replayed
      after a release leaves no intermediates to read (``live`` is False) until a forward
      runs its Python again. A backward that needs them and has no graph of its own
      recomputes the forward eagerly (aux states restored: a running mean moves once) and
      the forward's graph is recaptured at its next call, together with the backward.

    ``make(key)`` builds a key's runner: a plain callable (CPU) or a :class:`GraphedCall`.
    """

    def __init__(self, values: list, keep: frozenset, make: Callable, rerun: Callable):
        self.values = values
        self.keep = keep  # slots the host reads or writes between runs, never released
        self.make = make
        self.rerun = rerun  # rerun(forward key): that forward's steps, eagerly
        self.calls: dict = {}
        self.snapshots: dict = {}  # forward key -> ((slot, tensor), ...) its capture left
        self.released: set = set()  # forward keys released since their capture
        self.owner = None  # the forward last run through its GraphedCall (not failed)
        self.holder = None  # the captured forward whose tensors ``values`` holds, if any
        self.live = True  # ``values`` holds the last forward's intermediates
        self.pool = None  # a CUDA graph memory pool shared with other executors
        self.backend = None  # CUDA's part of the captures (None: CudaBackend; tests: fakes)
        self.graphs = False  # whether a forward was captured (arguments then stay in place)

    def get(self, key):
        call = self.calls.get(key)
        if call is None:
            call = self.calls[key] = self.make(key)
        return call

    def forward(self, key) -> None:
        call = self.get(key)
        if call.__class__ is not GraphedCall:
            call()
            self.live = True
            return
        replay = call.graph is not None
        call()
        if replay:
            if self.holder != key:
                self._restore(key)
                self.holder = key
            self.live = key not in self.released
        else:
            self.holder, self.live = None, True
            if call.graph is not None:  # captured just now
                self.graphs, self.holder = True, key
                self.snapshots[key] = tuple((s, t) for s, t in enumerate(self.values)
                                            if t is not None and s not in self.keep)
                self.released.discard(key)
        self.owner = None if call.failed else key

    def ran_eagerly(self) -> None:
        """A forward ran its steps outside any graph (monitored, profiled)."""
        self.owner, self.holder, self.live = None, None, True

    def backward_key(self, is_train: bool) -> tuple:
        return ("backward", is_train, self.owner)

    def backward(self, key) -> None:
        call = self.get(key)
        if call.__class__ is not GraphedCall:
            call()
            return
        fcall = self.calls.get(key[2]) if key[2] is not None else None
        if fcall is None or fcall.graph is None:  # its forward ran eagerly: so does it
            call.run_eagerly()
            return
        if call.graph is not None:
            call()
            return
        if not self.live:  # released since the capture: recompute, recapture the pair later
            self.need_values(key[2])
            fcall.reset()
            self.snapshots.pop(key[2], None)
            call.run_eagerly()
            return
        call()
        if call.failed:  # its forward's graph would leave it reading stale addresses
            fcall.reset(failed=True)
            self.owner = self.holder = None

    def need_values(self, fkey) -> None:
        """Make sure ``values`` holds forward ``fkey``'s intermediates (for an eager
        backward)."""
        if not self.live and fkey is not None:
            self.rerun(fkey)
            self.holder, self.live = None, True

    def _restore(self, key) -> None:
        values, keep = self.values, self.keep
        for s in range(len(values)):
            if s not in keep:
                values[s] = None
        for s, t in self.snapshots[key]:
            values[s] = t

    @property
    def captured(self) -> bool:
        return any(getattr(c, "graph", None) is not None for c in self.calls.values())

    def release(self, outputs: frozenset) -> None:
        """Drop the references to every value but ``keep`` and ``outputs`` (which stay
        readable, as MXNet's outputs do until their executor runs again)."""
        values, keep = self.values, self.keep
        for s in range(len(values)):
            if s not in keep and s not in outputs:
                values[s] = None
        for key, snap in self.snapshots.items():
            self.snapshots[key] = tuple((s, t) for s, t in snap if s in outputs)
            self.released.add(key)
        self.live = False
