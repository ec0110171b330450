"""Triton kernels for symgraph's operators. Imports only torch and triton.

Each kernel family lives in ``kernels/<family>.py`` as ``_<name>_kernel`` (``@triton.jit``),
a launch wrapper ("check, allocate, launch"), the torch reference directly below it, and an
entry in that module's ``KERNELS`` table giving test cases and a benchmark. The operator
definitions in ``symgraph/ops`` point their ``kernel`` field at the wrappers; the bound plan
picks kernel or reference per the backend setting in ``symgraph.config``.

The kernels themselves arrive with the kernels issue; until then every op runs its torch
reference, which is also what the CPU default path uses.
"""
