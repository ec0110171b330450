"""pool kernels (in progress)."""
KERNELS: list = []
