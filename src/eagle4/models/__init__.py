"""Small Llama-architecture target and EAGLE-style draft head, loaded from local safetensors
directories (HF-style ``config.json`` + ``model.safetensors`` or a sharded index). No hub access.

* :mod:`eagle4.models.llama`: RMSNorm, RoPE, SwiGLU, GQA, Hugging Face weight names.
* :mod:`eagle4.models.eagle`: one decoder layer fed ``fc([embed(token); feature])``.
* :mod:`eagle4.models.tokenizer`: the model directory's ``tokenizer.json`` (a ``tokenizers`` BPE file,
  or the legacy byte scheme).
"""

from eagle4.models.eagle import EagleDraft, load_draft
from eagle4.models.llama import LlamaConfig, LlamaModel, load_target
from eagle4.models.tokenizer import ByteTokenizer, HFTokenizer, load_tokenizer

__all__ = ["LlamaConfig", "LlamaModel", "load_target", "EagleDraft", "load_draft",
           "ByteTokenizer", "HFTokenizer", "load_tokenizer"]
