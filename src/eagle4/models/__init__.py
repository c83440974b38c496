"""Small Llama-architecture target and EAGLE-style draft head, loaded from local safetensors
directories (HF-style ``config.json`` + ``model.safetensors`` or a sharded index). No hub access.

* :mod:`eagle4.models.llama`: RMSNorm, RoPE, SwiGLU, GQA; a paged KV cache addressed by slot
  ids (the ``req_to_token`` convention of KERNELS.md), attention driven by explicit per-request
  KV index lists and bool masks (K4's ``kv_indices`` / ``packed_mask`` after unpacking).
* :mod:`eagle4.models.eagle`: one decoder layer fed ``fc([embed(token); feature])``.
* :mod:`eagle4.models.tokenizer`: the model directory's ``tokenizer.json`` (a ``tokenizers`` BPE file,
  or the legacy byte scheme).
"""

from eagle4.models.eagle import EagleDraft, load_draft
from eagle4.models.llama import KVCache, LlamaConfig, LlamaModel, load_target
from eagle4.models.tokenizer import ByteTokenizer, HFTokenizer, load_tokenizer

__all__ = ["LlamaConfig", "LlamaModel", "KVCache", "load_target", "EagleDraft", "load_draft",
           "ByteTokenizer", "HFTokenizer", "load_tokenizer"]
