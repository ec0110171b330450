"""MXNet's 2-bit gradient compression with error feedback (per key, per device residual)."""
from __future__ import annotations

import torch

from ..base import MXNetError


class TwoBitCompression:
    """2-bit quantisation as MXNet 1.9.1's ``GradientCompression`` (``type='2bit'``).

    For each pushed copy ``g`` with residual ``r`` (float32, on ``g``'s device, zero at the
    first push): ``v = g + r``; the sent value is ``+t`` where ``v >= t``, ``-t`` where
    ``v <= -t``, else 0; the new residual is ``v`` minus the sent value.

    >>> import torch
    >>> gc = TwoBitCompression.from_params({'type': '2bit', 'threshold': 0.5})
    >>> gc.quantize('w', 0, torch.tensor([0.7, -0.3, 0.1]))
    tensor([0.5000, 0.0000, 0.0000])
    >>> gc.quantize('w', 0, torch.tensor([0.0, -0.3, 0.1]))
    tensor([ 0.0000, -0.5000,  0.0000])
    >>> TwoBitCompression.from_params({'type': '1bit'})
    Traceback (most recent call last):
    ...
    symgraph.base.MXNetError: Unknown type for gradient compression 1bit
    """

    def __init__(self, threshold: float = 0.5):
        self.threshold = float(threshold)
        self._residual: dict[tuple, torch.Tensor] = {}

    @classmethod
    def from_params(cls, params: dict) -> TwoBitCompression:
        """Parse MXNet's ``compression_params`` dict (values may be strings, as in MXNet)."""
        if not isinstance(params, dict):
            raise TypeError(f"unexpected type for compression_params: {type(params)}")
        if "type" not in params:
            raise MXNetError("Required parameter type of string is not presented")
        if str(params["type"]) != "2bit":
            raise MXNetError(f"Unknown type for gradient compression {params['type']}")
        threshold = float(str(params.get("threshold", 0.5)))
        if not threshold > 0:
            raise MXNetError(f"threshold must be greater than 0, got {threshold}")
        return cls(threshold)

    def quantize(self, key, index: int, grad: torch.Tensor) -> torch.Tensor:
        """The dequantised value sent for copy ``index`` of ``key``; updates its residual."""
        res = self._residual.get((key, index))
        if res is None or res.shape != grad.shape or res.device != grad.device:
            res = torch.zeros_like(grad, dtype=torch.float32)
        value = grad.to(torch.float32) + res
        pos_t = torch.tensor(self.threshold, dtype=torch.float32, device=grad.device)
        zero = torch.zeros((), dtype=torch.float32, device=grad.device)
        sent = torch.where(value >= pos_t, pos_t, torch.where(value <= -pos_t, -pos_t, zero))
        self._residual[(key, index)] = value - sent
        return sent.to(grad.dtype)
