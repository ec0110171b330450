"""optimizer kernels (in progress)."""
KERNELS: list = []
