"""Shim of the ``sglang`` package: only what sglang/bench_serving.py and sglang/benchmark/ import (see README.md)."""
