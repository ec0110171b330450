"""index kernels (in progress)."""
KERNELS: list = []
