"""The fused FPGA draft pipeline's approximations, applied to the engine's draft model, and the
measurement of their effect on the mean acceptance length (gate ``approximation_acceptance_impact``).

The fused design (``hls/fused/draft_pipeline``, contract ``[fpga.fused]``) differs from the exact draft
in two ways, reproduced here without changing the engine:

1. **Hot vocabulary** (``lm_head_vocab = "hot"``): the draft LM head computes logits only for the
   ``Vh`` hot tokens. The softmax / top-K (K5 + host top-K in the engine, ``stage_candidates`` in
   HLS) then run over ``Vh`` columns, so the draft candidates are *hot indices*; K1 maps them back
   to real token ids through its ``hot_token_id`` table (KERNELS.md §1.5 step 2,
   ``use_hot_token_id = true``) before K2 stores them in the tree. Here:
   :func:`restrict_lm_head` swaps the draft ``lm_head`` for one holding only the hot rows, and
   :class:`HotTokenBackend` wraps the engine's kernel backend so every K1 call gets
   ``hot_token_id`` and ``use_hot_token_id = True`` (the engine's own call passes ``False``).

   The hot set (:func:`select_hot_vocab`) is chosen deterministically from token frequencies of the
   embedded pair's *training tokens* (``models/default/training_token_counts.npy``, written by
   ``scripts/train_default_pair.py``, its sha256 recorded in ``training_summary.json``): rank by
   (count descending, token id ascending), keep the first ``Vh``, store them sorted by token id
   (EAGLE-3's ``d2t`` convention). The evaluation prompts (held out from training) are *not* used to
   pick the set. ``Vh`` is the deployment ratio ``[fpga.model] hot_vocab_size / vocab_size``
   (32768 / 128256) scaled to the embedded model's vocabulary and rounded (16384 -> 4186), see
   :func:`scaled_hot_vocab_size`.

2. **int8 transport** (``lm_head_dtype = "int8"``, ``drafter_dtype = "int8"``): weights travel as
   int8 with one f32 scale per output row, symmetric (``scale = max|w_row| / 127``,
   ``q = clamp(round_half_even(w / scale), -127, 127)``). :func:`fake_quant_int8_rows` quantizes and
   dequantizes (``q * scale`` in f32); the model then runs its ordinary f32 arithmetic on the
   dequantized weights. **int4 LM head** (``lm_head_dtype = "int4"``, :mod:`.int4`): the same with
   ``scale = max|w_row| / 7`` and ``q`` in -7..7, two weights per byte in HBM. (The HLS LM head computes ``(sum q*x) * scale``; it differs from
   ``sum (q*scale)*x`` only by f32 rounding.) "Drafter weights" are the weights the budget model
   counts as drafter weights (``FpgaModel.drafter_params``): ``fc.weight`` and every linear weight
   of the decoder layer(s) (q/k/v/o, gate/up/down). Biases, RMSNorm weights and the token
   embedding stay as they are (the embedding is a bf16 lookup in the design).

:func:`measure` runs the contract's prompts through fresh engines (exact, each approximation alone,
both together), checks that every greedy request's speculative output still equals its target-only
greedy output (speculative decoding is lossless: the approximations may only change acceptance), records
how much of the target's output the hot set covers (1: the hot vocabulary cannot bite on this model and
the gate refuses the measurement), and returns one
row per configuration; :func:`write_csv` writes ``reports/acceptance_impact.csv`` with the columns
``eagle4.gates.metrics.acceptance_length_impact`` reads (``impact``, ``provenance``,
``contract_sha256``).

Modules, one concern each: :mod:`.hot_vocab` (the hot set, the restricted LM head), :mod:`.int4` (int4 LM head), :mod:`.rowquant` (the per-row rule both share),
:mod:`.hot_backend` (K1 on the hot path), :mod:`.int8` (int8 transport), :mod:`.configs` (which
approximations, applied to an engine), :mod:`.measure` (the experiment and its CSV).
"""

from __future__ import annotations

from eagle4.workload.approximations.configs import (
           CONFIGS,
           EXACT,
           SPLIT_CONFIGS,
           Applied,
           ApproxConfig,
           apply_approximations,
           fused_config,
)
from eagle4.workload.approximations.hot_backend import HotTokenBackend
from eagle4.workload.approximations.hot_vocab import (
           HotVocab,
           contract_hot_vocab_size,
           default_hot_vocab,
           restrict_lm_head,
           scaled_hot_vocab_size,
           select_hot_vocab,
           token_frequencies,
           training_token_counts,
)
from eagle4.workload.approximations.int4 import (
           dequantize_int4_rows,
           pack_int4_rows,
           quantize_int4_rows,
           quantize_lm_head_int4_,
           unpack_int4_rows,
)
from eagle4.workload.approximations.int8 import (
           dequantize_int8_rows,
           drafter_linears,
           fake_quant_int8_rows,
           quantize_drafter_,
           quantize_int8_rows,
           quantize_lm_head_,
)
from eagle4.workload.approximations.measure import CSV_FIELDS, LosslessnessError, measure, write_csv

__all__ = ["CONFIGS", "CSV_FIELDS", "EXACT", "SPLIT_CONFIGS", "ApproxConfig", "Applied", "HotTokenBackend",
           "HotVocab", "LosslessnessError", "apply_approximations", "contract_hot_vocab_size", "default_hot_vocab",
           "dequantize_int4_rows", "dequantize_int8_rows", "pack_int4_rows", "quantize_int4_rows",
           "quantize_lm_head_int4_", "unpack_int4_rows", "drafter_linears", "fake_quant_int8_rows", "fused_config", "measure",
           "quantize_drafter_", "quantize_int8_rows", "quantize_lm_head_", "restrict_lm_head",
           "scaled_hot_vocab_size", "select_hot_vocab", "token_frequencies", "training_token_counts", "write_csv"]
