"""Shim of the ``vllm`` package: only what vllm/benchmarks/{serve.py,lib,datasets} import (see README.md)."""
