"""The parts of ``nose`` MXNet 1.9.1's tests import (nose itself does not import on Python
3.10+); written for the harness, on top of pytest."""
