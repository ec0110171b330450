"""``mx.gluon.nn``: neural network layers, as MXNet 1.9.1's ``gluon.nn``.

Like MXNet's package it re-exports ``Block``, ``HybridBlock`` and ``SymbolBlock``.
"""
from __future__ import annotations

from ..block import Block, HybridBlock, SymbolBlock
from .activations import ELU, GELU, SELU, Activation, LeakyReLU, PReLU, Swish
from .basic_layers import (
    BatchNorm,
    BatchNormReLU,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    GroupNorm,
    HybridLambda,
    HybridSequential,
    InstanceNorm,
    Lambda,
    LayerNorm,
    Sequential,
)
from .conv_layers import (
    AvgPool1D,
    AvgPool2D,
    AvgPool3D,
    Conv1D,
    Conv1DTranspose,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalAvgPool3D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPool3D,
    MaxPool1D,
    MaxPool2D,
    MaxPool3D,
    ReflectionPad2D,
)

__all__ = [
    "Block", "HybridBlock", "SymbolBlock",
    "Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU",
    "Sequential", "HybridSequential", "Dense", "Dropout", "Embedding", "BatchNorm",
    "BatchNormReLU", "InstanceNorm", "LayerNorm", "GroupNorm", "Flatten", "Lambda", "HybridLambda",
    "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
    "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D",
    "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
    "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D",
]
