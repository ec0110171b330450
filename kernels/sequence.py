"""sequence kernels (in progress)."""
KERNELS: list = []
