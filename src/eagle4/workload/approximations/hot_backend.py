"""A kernel-backend wrapper that sends every K1 call down the hot-vocabulary path (``hot_token_id``,
``use_hot_token_id = True``) without changing the engine."""

from __future__ import annotations

import numpy as np

from eagle4.backends.base import Backend


class HotTokenBackend(Backend):
    """Wraps a kernel backend: every K1 (``draft_tree_score``) call gets the hot table and
    ``use_hot_token_id = True``; everything else passes through. ``k1_calls`` counts the K1 calls
    made on the hot path, ``last_k1`` keeps the last call's token tensors (before / after remap)."""

    def __init__(self, inner: Backend, hot_token_id):
        self.inner = inner
        self.hot = np.ascontiguousarray(np.asarray(hot_token_id, np.int64))
        self.name = inner.name
        self.provenance = inner.provenance
        self.k1_calls = 0
        self.last_k1: dict = {}

    def available(self):
        return self.inner.available()

    def supports(self, kernel):
        return self.inner.supports(kernel)

    def device_info(self):
        return self.inner.device_info()

    def run(self, kernel, inputs, params):
        if kernel == "draft_tree_score":
            inputs = {**inputs, "hot_token_id": self.hot}
            params = {**params, "use_hot_token_id": True}
            out = self.inner.run(kernel, inputs, params)
            self.k1_calls += 1
            self.last_k1 = {"tokens_in": np.array(inputs["topk_tokens_sampling"]),
                            "tokens_out": np.array(out["topk_tokens_sampling"])}
            return out
        return self.inner.run(kernel, inputs, params)
