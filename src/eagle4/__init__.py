"""EAGLE4 CostDraftTree sign-off harness: reference kernels, backends, cases, budget, reports."""

__version__ = "0.1.0"
