"""Runnable examples: ``python -m symgraph.examples.<name>``."""
