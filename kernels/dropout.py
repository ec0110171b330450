"""dropout kernels (in progress)."""
KERNELS: list = []
