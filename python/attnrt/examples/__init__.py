"""Runnable examples: ``python -m attnrt.examples.train --attn_implementation sdpa``."""
