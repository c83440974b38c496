"""Which approximations a configuration applies (exact, hot vocabulary, int8 transport, both, the int4 LM
head alone and with the hot vocabulary and the int8 drafter; the contract's ``[fpga.fused]``), and applying one to the engine's draft model in place."""

from __future__ import annotations

from dataclasses import dataclass, field

from eagle4.workload.approximations.hot_backend import HotTokenBackend
from eagle4.workload.approximations.hot_vocab import HotVocab, restrict_lm_head
from eagle4.workload.approximations.int4 import quantize_lm_head_int4_
from eagle4.workload.approximations.int8 import quantize_drafter_, quantize_lm_head_


@dataclass(frozen=True)
class ApproxConfig:
    name: str
    hot_vocab: bool = False
    int8_lm_head: bool = False
    int8_drafter: bool = False
    int4_lm_head: bool = False

    def __post_init__(self):
        if self.int8_lm_head and self.int4_lm_head:
            raise ValueError(f"{self.name}: the LM head is int8 or int4, not both")

    @property
    def lm_head_vocab(self) -> str:
        return "hot" if self.hot_vocab else "full"

    @property
    def lm_head_dtype(self) -> str:
        return "int4" if self.int4_lm_head else "int8" if self.int8_lm_head else "float32"

    @property
    def drafter_dtype(self) -> str:
        return "int8" if self.int8_drafter else "float32"


EXACT = ApproxConfig("exact")
CONFIGS = [EXACT,
           ApproxConfig("hot_vocab", hot_vocab=True),
           ApproxConfig("int8_transport", int8_lm_head=True, int8_drafter=True),
           ApproxConfig("hot_vocab+int8_transport", hot_vocab=True, int8_lm_head=True, int8_drafter=True),
           ApproxConfig("int4_lm_head", int4_lm_head=True),
           ApproxConfig("hot_vocab+int4_lm_head+int8_drafter", hot_vocab=True, int4_lm_head=True, int8_drafter=True)]
SPLIT_CONFIGS = [ApproxConfig("int8_lm_head", int8_lm_head=True), ApproxConfig("int8_drafter", int8_drafter=True)]


def fused_config(contract) -> ApproxConfig:
    """The approximations ``[fpga.fused]`` of the contract declares, as one configuration."""
    from eagle4.contract import fpga_section

    f = fpga_section(contract).fused
    return ApproxConfig("fused", hot_vocab=f.lm_head_vocab == "hot", int8_lm_head=f.lm_head_dtype == "int8",
                        int4_lm_head=f.lm_head_dtype == "int4", int8_drafter=f.drafter_dtype == "int8")


@dataclass
class Applied:
    config: ApproxConfig
    hot: HotVocab | None = None
    backend: HotTokenBackend | None = None
    quant_errs: list = field(default_factory=list)


def apply_approximations(engine, config: ApproxConfig, hot: HotVocab | None = None) -> Applied:
    """Turn ``engine``'s draft model into ``config``'s approximated form, in place (use a fresh engine
    per configuration). The target model and the engine code are untouched."""
    a = Applied(config)
    draft = engine.draft_model
    if draft is None:
        raise ValueError(f"{config.name}: approximations edit a trained draft; a dummy-loaded pair has none")
    if config.hot_vocab:
        if hot is None:
            raise ValueError(f"{config.name}: the hot-vocabulary approximation needs a hot table")
        restrict_lm_head(draft, hot.token_ids)
        engine.backend = a.backend = HotTokenBackend(engine.backend, hot.token_ids)
        a.hot = hot
    if config.int8_lm_head:
        a.quant_errs += quantize_lm_head_(draft)
    if config.int4_lm_head:
        a.quant_errs += quantize_lm_head_int4_(draft)
    if config.int8_drafter:
        a.quant_errs += quantize_drafter_(draft)
    return a
