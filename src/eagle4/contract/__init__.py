"""The benchmark contract: what every run of the workload is pinned to. The one loader.

``load_contract(path) -> Contract`` reads a TOML file with :mod:`tomllib` and returns the model of its kind:
a :class:`WorkloadContract` (the workload every kernel and step measurement is pinned to) or, for a file
with an ``[engine]`` section, an :class:`EngineContract` (gates over a GPU engine's results). It validates
every section
with pydantic (``[fpga]``, ``[trace]`` and ``[[gates]]`` included: :mod:`eagle4.contract.fpga`,
:mod:`~eagle4.contract.trace`, :mod:`~eagle4.contract.gates`), checks every prompt file's sha256 and
resolves model paths. Any error is one line naming the file and the dotted field. Every command
loads its contract here; nothing catches the error and reads the raw TOML instead.

``Contract.sha256`` is the hash of the canonical content (sorted-key JSON of the validated document:
core sections with their defaults, the owned sections as written, extension tables verbatim); every
result row carries it, and :func:`ensure_same_contract` refuses to compare rows produced under
different hashes. Library functions take "a contract" through :func:`as_contract`: a Contract, a path,
or a dict (a :class:`PartialContract` of the sections given, as tests and embedding programs use).

``[baseline] card`` names the card (of :mod:`eagle4.cards`) whose committed GPU measurement the contract's GPU
figures are judged on. It is a judgement parameter, not part of the workload: left out of the hash, so switching the
card keeps every committed row of the contract valid, and each card's rows stay in their own record.

Extension tables: a top-level table the schema does not know is kept verbatim and hashed (another
tool's section), unless its name is close to a known section (``[fpgaa]``): that is a typo, refused.

Relative paths in the contract are relative to the repository root: the nearest ancestor of the
contract file that holds ``pyproject.toml`` (else the contract's own directory).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from eagle4.cards import CARDS, Card, card_named
from eagle4.contract.base import ContractError, ContractMismatch, Section
from eagle4.contract.engine import EngineSection, Scenario, check_scenarios
from eagle4.contract.fpga import FpgaSection
from eagle4.contract.gates import GateError, GateSpec, check_gate_names, validate_gates
from eagle4.contract.trace import TraceSection
from eagle4.log_invariants import LogInvariants

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore


MIN_RUNS = 5  # independent runs per operating point, the least any contract may ask for
INT64 = (-(2**63), 2**63 - 1)  # TOML integers are 64-bit


class Meta(Section):
    name: str
    version: int = Field(ge=1)
    description: str = ""


class TargetArch(Section):
    """Llama-style target architecture of a ``load = "dummy"`` pair (weights generated from a seed)."""

    hidden_size: int = Field(ge=8, le=65536)
    num_layers: int = Field(ge=1, le=256)
    num_heads: int = Field(ge=1, le=256)
    num_kv_heads: int = Field(ge=1, le=256)
    intermediate_size: int = Field(ge=8, le=262144)
    vocab_size: int = Field(ge=16, le=1 << 20)
    rope_theta: float = Field(500000.0, gt=0)
    rms_norm_eps: float = Field(1e-5, gt=0)

    @model_validator(mode="after")
    def _heads(self):
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size={self.hidden_size} must be a multiple of num_heads={self.num_heads}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads={self.num_heads} must be a multiple of num_kv_heads={self.num_kv_heads} (GQA)")
        return self

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads


class DraftArch(Section):
    """EAGLE3-style draft head: fc over the hidden states captured at ``fc_layers`` of the target,
    ``num_layers`` decoder layer(s) on [embedding ; hidden], LM head over the hot vocabulary."""

    kind: Literal["eagle3"] = "eagle3"
    fc_layers: list[int] = Field(min_length=1, description="target layers whose outputs the fc concatenates")
    num_layers: int = Field(1, ge=1, le=8)
    hot_vocab_size: int = Field(ge=2, description="draft LM-head rows (hot vocabulary; d2t maps them to the target vocab)")


class ModelPair(Section):
    load: Literal["local", "dummy"] = Field("local", description=(
        "local: read target/draft from model folders; dummy: generate weights of the declared architecture "
        "on the device from `seed` (serving engines' dummy load format) -- drafts are then meaningless, so "
        "acceptance must come from [acceptance] trace"))
    target: str | None = Field(None, description="local directory: config.json + *.safetensors (HF Llama layout)")
    draft: str | None = Field(None, description="local directory of the EAGLE-style draft head")
    dtype: Literal["float32", "bfloat16", "float16", "float64"] = "float32"
    embedded: bool = Field(False, description="true for the committed default pair under models/default")
    seed: int = Field(0, ge=0, description="dummy load: seed of the generated weights")
    target_arch: TargetArch | None = None
    draft_arch: DraftArch | None = None
    tp: int = Field(1, ge=1, le=64, description=(
        "tensor-parallel degree of the target (one process and GPU per rank, eagle4.models.tensor_parallel); "
        "hashed only when not 1"))

    @model_validator(mode="after")
    def _load(self):
        if self.load == "local":
            if not self.target or not self.draft:
                raise ValueError("load = 'local' needs model.target and model.draft (local model folders)")
        else:
            if self.target_arch is None or self.draft_arch is None:
                raise ValueError("load = 'dummy' needs [model.target_arch] and [model.draft_arch]")
            bad = [i for i in self.draft_arch.fc_layers if not 0 <= i < self.target_arch.num_layers]
            if bad:
                raise ValueError(f"draft_arch.fc_layers {bad} outside 0..{self.target_arch.num_layers - 1}")
            if self.draft_arch.hot_vocab_size > self.target_arch.vocab_size:
                raise ValueError("draft_arch.hot_vocab_size must be <= target_arch.vocab_size")
        if self.tp > 1:
            if self.load != "dummy":
                raise ValueError(f"tp = {self.tp} needs load = 'dummy' (a local pair loads whole on one device)")
            t = self.target_arch
            # KV heads split across ranks; MLP columns in gcd(intermediate, 64) blocks (tensor_parallel.BlockGen)
            if t.num_kv_heads % self.tp or math.gcd(t.intermediate_size, 64) % self.tp:
                raise ValueError(f"tp = {self.tp} must divide target_arch.num_kv_heads ({t.num_kv_heads}) and "
                                 f"gcd(target_arch.intermediate_size, 64) ({math.gcd(t.intermediate_size, 64)})")
        return self


class Acceptance(Section):
    """Where accepted lengths come from. ``model``: the pair's own drafts (a trained pair). ``trace``:
    a named, hashed accept-length trace measured on a trained pair; K6/K7 are driven to reproduce it
    (the only honest choice for dummy weights, whose drafts mean nothing)."""

    source: Literal["model", "trace"] = "model"
    trace: str | None = Field(None, description="CSV with an accept_length column (accepted draft tokens per verify step)")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    measured_on: str = Field("", description="the trained pair and contract the trace was measured on")

    @model_validator(mode="after")
    def _trace(self):
        if self.source == "trace" and (not self.trace or not self.sha256):
            raise ValueError("source = 'trace' needs trace (path) and sha256")
        return self


class Slo(Section):
    """Service-level objective of goodput: a request counts when TTFT and TPOT are both within."""

    ttft_ms: float = Field(gt=0)
    tpot_ms: float = Field(gt=0)


class Measurement(Section):
    """Rules of a measured run (serving-benchmark style). A row that misses one is marked INVALID."""

    min_samples: int = Field(200, ge=1, description="p50/p99 need at least this many samples per point")
    warmup_steps_min: int = Field(8, ge=0, description="warm-up verify steps at least, before the steady-state test")
    steady_window: int = Field(8, ge=2, description="steady state: CoV of the last `steady_window` step times <= steady_cov")
    steady_cov: float = Field(0.05, gt=0, le=1)
    gc_freeze: bool = True
    pin_cores: bool = True
    nvml_sample_hz: float = Field(20.0, gt=0, le=1000, description="NVML power sampling rate (energy/token)")
    hbm_peak_tbps: float = Field(3.35, gt=0, description="read by nothing; kept for the hash of contracts "
                                 "that set it: rooflines divide by the declared peak of the card that ran "
                                 "(eagle4.cards)")
    step_over_kernels_max: float = Field(1.3, ge=1, description="B=1 goal: step time / sum of its GPU kernel times")
    hotspot_top_n: int = Field(3, ge=1)
    hotspot_coverage_min: float = Field(0.70, gt=0, le=1, description="WP2: top-N regions cover this share of step time")


class Decode(Section):
    node_top_k: int = Field(ge=1, le=10, description="K: children sampled per frontier node")
    tree_depth: int = Field(ge=1, le=32, description="D_max: draft layers per draft step (root expansion included)")
    verify_num: int = Field(ge=1, le=128, description="Vn: verify budget per step (tokens per request in the verify tree)")
    max_tree_width: int = Field(ge=1, le=64, description="upper bound on the frontier width W")
    max_node_count: int = Field(ge=2, le=4096, description="N: node capacity of the draft tree")
    max_verify_num: int = Field(ge=1, le=128, description="M: capacity of the verify budget buffers")
    max_input_size: int = Field(ge=1, le=1024, description="I: draft-mask capacity")
    temperatures: list[float] = Field(min_length=1, description="per-request temperatures, cycled over requests")
    threshold_single: float = 1.0
    threshold_acc: float = 1.0
    width_policy: Literal["fixed", "work_deltas"] = "fixed"
    stop_on_eos: bool = False

    @field_validator("temperatures")
    @classmethod
    def _temps(cls, v):
        if any(t < 0 for t in v):
            raise ValueError("temperatures must be >= 0 (0 = greedy)")
        return v

    @model_validator(mode="after")
    def _consistent(self):
        K, W, D = self.node_top_k, self.max_tree_width, self.tree_depth
        if W > K:
            raise ValueError(f"max_tree_width={W} must be <= node_top_k={K} (the frontier is taken from the K layer outputs)")
        if W * K > 64:
            raise ValueError(f"max_tree_width*node_top_k={W * K} must be <= 64 (K1 candidate bound C <= 64)")
        if self.verify_num > self.max_verify_num:
            raise ValueError(f"verify_num={self.verify_num} must be <= max_verify_num={self.max_verify_num}")
        need_n = 1 + K + (D - 1) * W * K
        if self.max_node_count < need_n:
            raise ValueError(f"max_node_count={self.max_node_count} must be >= 1 + K + (D_max-1)*W*K = {need_n} "
                             "so no drafted node is dropped")
        if (D - 1) * W > self.max_input_size:
            raise ValueError(f"max_input_size={self.max_input_size} must be >= (D_max-1)*max_tree_width = {(D - 1) * W}")
        return self

    @property
    def S(self) -> int:
        return self.tree_depth + 1


class PromptFile(Section):
    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Prompts(Section):
    files: list[PromptFile] = Field(default_factory=list, description="prompt sets (load = 'local'); a dummy pair draws token ids")
    prompt_tokens: int = Field(ge=2, le=8192, description="prompt length in tokens (BOS included); longer prompts are truncated, shorter ones are used as they are")
    output_tokens: int = Field(ge=1, le=8192, description="tokens generated per request (ignore EOS unless decode.stop_on_eos)")


class Phase(Section):
    duration_s: float = Field(gt=0)
    concurrency: int = Field(ge=1, le=4096)


class BatchProfile(Section):
    mode: Literal["static", "phases", "concurrency", "poisson"] = Field("static", description=(
        "static: every request of a point starts at t = 0; phases: the HTTP client's concurrency phases; "
        "concurrency: `batch` requests always in flight (a finished batch is replaced by the next); "
        "poisson: requests arrive at `request_rate` per second (exponential gaps), served in batches of <= `batch`"))
    phases: list[Phase] = Field(default_factory=list)

    @model_validator(mode="after")
    def _phases(self):
        if self.mode == "phases" and not self.phases:
            raise ValueError("mode = 'phases' needs at least one [[batch_profile.phases]] entry")
        return self


class OperatingPoint(Section):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    batch: int = Field(ge=1, le=128)
    request_rate: float | None = Field(None, gt=0, description="poisson mode: requests per second")


class Runs(Section):
    warmup: int = Field(ge=0, le=100)
    runs: int = Field(ge=MIN_RUNS, le=1000, description=f"independent runs per operating point (>= {MIN_RUNS})")
    seeds: list[int] = Field(min_length=1)
    cov_max: float = Field(0.05, gt=0, le=1.0, description="max coefficient of variation of tokens/s across runs")
    min_duration_s: float = Field(0.0, ge=0, le=600, description=(
        "a run repeats the measured generation until this much wall time is measured (MLPerf-style "
        "minimum duration; its acceptance is the first generation's); 0 = one generation"))

    @model_validator(mode="after")
    def _seeds(self):
        if len(self.seeds) < self.runs:
            raise ValueError(f"seeds has {len(self.seeds)} entries; need one per run (runs = {self.runs})")
        return self


_WORKLOAD = ("model", "decode", "prompts", "operating_points", "runs")
_MODEL_ADDED_DEFAULTS = {"load": "local", "seed": 0, "target_arch": None, "draft_arch": None, "tp": 1}


class HttpClient(Section):
    """Bounded waits of ``eagle4 workload http`` (``--timeout`` / ``--connect-timeout`` override)."""

    request_timeout_s: float = Field(120.0, gt=0, le=3600, description=(
        "deadline of one streamed request (and the longest silence between chunks); a request past it fails "
        "the run"))
    connect_timeout_s: float = Field(10.0, gt=0, le=600, description="TCP connect deadline")


class Baseline(Section):
    """``[baseline]``: the card this contract's GPU figures are judged on (excluded from the hash)."""

    card: str = Field(description="a card name of eagle4.cards.CARDS, e.g. \"H100 SXM\"")

    @field_validator("card")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in {c.name for c in CARDS}:
            raise ValueError(f"{v!r} is not a card of eagle4.cards.CARDS ({', '.join(c.name for c in CARDS)})")
        return v


class _ContractBase(Section):
    """What every contract kind holds: its name, the sections of the FPGA accounting and the gates, the
    run rules, and any extension tables of other tools (verbatim, hashed)."""

    kind: ClassVar[str]
    # the other kind's sections, refused by name with the kind's message
    _refused: ClassVar[tuple[str, ...]] = ()
    _refusal: ClassVar[str] = ""

    contract: Meta
    acceptance: Acceptance = Acceptance()
    slo: Slo | None = None
    measurement: Measurement = Measurement()
    http: HttpClient = HttpClient()
    baseline: Baseline | None = None  # the card the GPU figures are judged on; not hashed
    fpga: FpgaSection = FpgaSection()
    trace: TraceSection = TraceSection()
    gates: list[GateSpec] = Field(default_factory=list)
    extensions: dict[str, Any] = Field(default_factory=dict, exclude=True,
                                       description="top-level tables of other tools, verbatim")

    # set by load_contract (excluded from the hash)
    source_path: str | None = Field(None, exclude=True)
    root_dir: str | None = Field(None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _split_extensions(cls, data):
        if not isinstance(data, dict):
            return data
        data = cls._prepare(data)
        given = [k for k in cls._refused if k in data]
        if given:
            raise ValueError(cls._refusal.format(given=given))
        known = set(cls.model_fields) - {"extensions"}
        ext = {k: v for k, v in data.items() if k not in known}
        if not ext:
            return data
        for k, v in ext.items():
            close = difflib.get_close_matches(k, sorted(known - {"source_path", "root_dir"}), n=1, cutoff=0.8)
            if close:
                raise ValueError(f"unknown section [{k}] (did you mean [{close[0]}]?)")
            if not (isinstance(v, dict) or (isinstance(v, list) and v and all(isinstance(x, dict) for x in v))):
                raise ValueError(f"unknown top-level key {k!r}: only tables of other tools are kept")
        return {**{k: v for k, v in data.items() if k in known}, "extensions": ext}

    @classmethod
    def _prepare(cls, data: dict) -> dict:
        return data

    @model_validator(mode="after")
    def _gate_names(self):
        check_gate_names(self.gates)
        return self

    # -- derived ---------------------------------------------------------------------------
    def canonical(self) -> dict[str, Any]:
        """What the hash covers: core sections with their defaults (fields added later left out while
        they hold their defaults); [fpga], [trace], [[gates]] and the kind's own tables as written
        (validated values, no defaults filled in, so giving them a schema changed no hash); extension
        tables verbatim."""
        owned = {"fpga", "trace", "gates", *self._as_written}
        d = self.model_dump(mode="json", exclude={"source_path", "root_dir", "extensions", "baseline", *owned})
        for name in owned & self.model_fields_set:
            v = getattr(self, name)
            if isinstance(v, list):
                d[name] = [x.model_dump(mode="json", exclude_unset=True) for x in v]
            elif isinstance(v, dict):
                d[name] = {k: x.model_dump(mode="json", exclude_unset=True) for k, x in v.items()}
            else:
                d[name] = v.model_dump(mode="json", exclude_unset=True)
        d.update(self.extensions)
        # Fields added after contracts were first hashed are left out while they hold their defaults,
        # so the hash of an older contract (stored in committed rows) does not change.
        for sec, default in (("acceptance", Acceptance()), ("measurement", Measurement()), ("slo", None),
                             ("http", HttpClient())):
            if getattr(self, sec) == default:
                d.pop(sec, None)
        return d

    _as_written: ClassVar[tuple[str, ...]] = ()

    @property
    def sha256(self) -> str:
        return canonical_sha256(self.canonical())

    @property
    def short_hash(self) -> str:
        return self.sha256[:12]

    def resolve(self, rel: str) -> Path:
        p = Path(rel)
        return p if p.is_absolute() else Path(self.root_dir or ".") / p

    @property
    def extra_sections(self) -> dict[str, Any]:
        """Extension tables of other tools (kept verbatim, hashed, rendered)."""
        return dict(self.extensions)


class WorkloadContract(_ContractBase):
    """A contract of the workload: the model pair, the decode tree, the prompts, the operating points and
    the runs every measurement of the kernels and the step is pinned to."""

    kind: ClassVar[str] = "workload"
    _refused: ClassVar[tuple[str, ...]] = ("scenarios", "log_invariants")
    _refusal: ClassVar[str] = "[[scenarios]] and [log_invariants] need an [engine] section (an engine contract)"

    model: ModelPair
    decode: Decode
    prompts: Prompts
    batch_profile: BatchProfile = BatchProfile()
    operating_points: list[OperatingPoint] = Field(min_length=1)
    runs: Runs

    @model_validator(mode="after")
    def _workload(self):
        for g in self.gates:
            if isinstance(g.logs, str):
                raise ValueError(f"gate {g.name}: logs {g.logs!r} is not a [log_invariants.<name>] table ([])")
        names = [p.name for p in self.operating_points]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"operating_points: duplicate name(s) {dup}")
        if self.model.load == "local" and not self.prompts.files:
            raise ValueError("prompts.files: model.load = 'local' needs at least one prompt file")
        if self.model.load == "dummy" and self.acceptance.source != "trace":
            raise ValueError("model.load = 'dummy' needs acceptance.source = 'trace' (dummy drafts are meaningless)")
        if self.batch_profile.mode == "poisson":
            miss = [p.name for p in self.operating_points if p.request_rate is None]
            if miss:
                raise ValueError(f"batch_profile.mode = 'poisson' needs request_rate on operating point(s) {miss}")
        return self

    def canonical(self) -> dict[str, Any]:
        d = super().canonical()
        for k, default in _MODEL_ADDED_DEFAULTS.items():
            if d["model"].get(k) == default:
                d["model"].pop(k)
        for p in d["operating_points"]:
            if p.get("request_rate") is None:
                p.pop("request_rate", None)
        return d

    def operating_point(self, name_or_batch) -> OperatingPoint:
        for p in self.operating_points:
            if p.name == str(name_or_batch) or str(p.batch) == str(name_or_batch):
                return p
        raise KeyError(f"no operating point {name_or_batch!r}; contract has {[p.name for p in self.operating_points]}")

    def load_prompts(self) -> list[dict]:
        """Every prompt record ({"id", "text"}) of the contract's prompt files, in file order."""
        out: list[dict] = []
        for f in self.prompts.files:
            for i, line in enumerate(self.resolve(f.path).read_text(encoding="utf-8").splitlines()):
                if line.strip():
                    rec = json.loads(line)
                    if "text" not in rec:
                        raise ContractError(f"{f.path}:{i + 1}: prompt record lacks 'text'")
                    rec.setdefault("id", f"{Path(f.path).stem}-{i}")
                    out.append(rec)
        if not out:
            raise ContractError("prompts: the prompt files hold no prompt")
        return out


_ENGINE_BATCH_PROFILE = BatchProfile().model_dump(mode="json")


class EngineContract(_ContractBase):
    """A contract of gates over the results a GPU engine wrote (``[engine]``, ``[[scenarios]]``,
    ``[log_invariants.<name>]``; :mod:`eagle4.contract.engine`)."""

    kind: ClassVar[str] = "engine"
    _refused: ClassVar[tuple[str, ...]] = (*_WORKLOAD, "batch_profile")
    _refusal: ClassVar[str] = "an engine contract ([engine]) gates imported results; {given} belong to a workload contract"
    _as_written: ClassVar[tuple[str, ...]] = ("engine", "scenarios", "log_invariants")

    engine: EngineSection
    scenarios: list[Scenario] = Field(default_factory=list)
    log_invariants: dict[str, LogInvariants] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _engine(self):
        check_scenarios(self.scenarios, self.gates, self.engine)
        for g in self.gates:
            if isinstance(g.logs, str) and g.logs not in self.log_invariants:
                raise ValueError(f"gate {g.name}: logs {g.logs!r} is not a [log_invariants.<name>] table "
                                 f"({sorted(self.log_invariants)})")
        return self

    @classmethod
    def _prepare(cls, data: dict) -> dict:
        if data.get("batch_profile") == _ENGINE_BATCH_PROFILE:  # a canonical document read back
            data = {k: v for k, v in data.items() if k != "batch_profile"}
        return data

    def canonical(self) -> dict[str, Any]:
        # Engine contracts were first hashed with the workload's [batch_profile] default in the document;
        # it stays, so their committed rows keep their hash.
        return {**super().canonical(), "batch_profile": dict(_ENGINE_BATCH_PROFILE)}


Contract = WorkloadContract | EngineContract
"""A loaded contract: one typed model per kind (``kind``: "workload" or "engine")."""

_KINDS: dict[str, type[_ContractBase]] = {"workload": WorkloadContract, "engine": EngineContract}


def _kind_of(doc: Mapping[str, Any]) -> type[_ContractBase]:
    return EngineContract if "engine" in doc else WorkloadContract


class PartialContract(Section):
    """Some sections of a contract, as tests and embedding programs give them (a dict): each section is
    validated by its schema when it is read; the hash is the document's as given."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)
    kind: ClassVar[str] = "partial"

    doc: dict[str, Any]

    @property
    def contract(self) -> Meta:
        return Meta.model_validate(self.doc["contract"])

    @property
    def fpga(self) -> FpgaSection:
        return FpgaSection.model_validate(self.doc.get("fpga", {}))

    @property
    def trace(self) -> TraceSection:
        return TraceSection.model_validate(self.doc.get("trace", {}))

    @property
    def gates(self) -> list[GateSpec]:
        return validate_gates(self.doc.get("gates", []))

    @property
    def baseline(self) -> Baseline | None:
        return Baseline.model_validate(self.doc["baseline"]) if "baseline" in self.doc else None

    @property
    def root_dir(self) -> str | None:
        return self.doc.get("root_dir")

    source_path: ClassVar[None] = None

    def section(self, name: str) -> dict[str, Any]:
        """A section as given (empty when absent)."""
        return dict(self.doc.get(name, {}))

    def canonical(self) -> dict[str, Any]:
        return dict(self.doc)

    @property
    def sha256(self) -> str:
        return canonical_sha256(self.doc)


def canonical_sha256(doc: Mapping[str, Any]) -> str:
    """sha256 of the sorted-key compact JSON of ``doc`` (the contract hash of a canonical document)."""
    d = {k: v for k, v in doc.items() if k not in ("source_path", "root_dir")}
    blob = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def sha256_file(path: str | Path) -> str:
    """sha256 of a regular file; a folder, device or pipe (``/dev/zero`` never ends) is a one-line error."""
    if not Path(path).is_file():
        raise ValueError(f"{path}: not a regular file (a folder, device or pipe cannot be hashed)")
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_NOTED_OUTSIDE: set[tuple[str, str]] = set()


def note_outside(root: Path, field: str, p: Path, sha256: str) -> str | None:
    """A file a contract pins that lies outside its repository (``root``) is read, as a tool that takes
    paths is expected to, but never silently: one line on stderr (once per path and hash in a process)
    names the field, the resolved path and its sha256. Returns the line (None inside the root)."""
    rp = Path(p).resolve()
    if rp.is_relative_to(Path(root).resolve()):
        return None
    line = f"note: {field}: {rp} lies outside the repository {root} (sha256 {sha256}); read as pinned"
    if (str(rp), sha256) not in _NOTED_OUTSIDE:
        _NOTED_OUTSIDE.add((str(rp), sha256))
        print(line, file=sys.stderr)
    return line


def _root_for(path: Path) -> Path:
    for d in [path.parent, *path.parent.parents]:
        if (d / "pyproject.toml").exists():
            return d
    return path.parent


def _fmt_loc(loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, str) and part.startswith("function-"):
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _out_of_range_ints(obj, loc=()):
    """Dotted locations of integers outside the 64-bit range TOML allows (tomllib accepts them)."""
    if isinstance(obj, bool):
        return
    if isinstance(obj, int) and not INT64[0] <= obj <= INT64[1]:
        yield _fmt_loc(loc)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _out_of_range_ints(v, (*loc, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _out_of_range_ints(v, (*loc, i))


def _toml_error(path: Path, text: str, e: Exception) -> ContractError:
    """A TOML syntax error as one line naming the key on the offending line (``x = null`` and the like)."""
    msg = str(e).splitlines()[0]
    m = re.search(r"line (\d+)", msg)
    where = ""
    if m:
        lines = text.splitlines()
        n = int(m.group(1))
        if 1 <= n <= len(lines):
            key = re.match(r"\s*([A-Za-z0-9_.\"-]+)\s*=", lines[n - 1])
            where = f" {key.group(1)} (line {n}):" if key else f" line {n}:"
    return ContractError(f"{path}:{where} not valid TOML: {msg}")


def _validation_error(path: Path, e: ValidationError) -> ContractError:
    parts = []
    for err in e.errors():
        msg = err["msg"].removeprefix("Value error, ")
        loc = _fmt_loc(err["loc"])
        got = err.get("input")
        shown = "" if isinstance(got, (dict, list)) and len(repr(got)) > 60 else f" (got {got!r})"
        if err["type"] in ("missing", "extra_forbidden") or "input" not in err or loc == "(top level)":
            shown = ""
        parts.append(f"{loc}: {msg}{shown}")
    return ContractError(f"{path}: invalid contract: " + "; ".join(parts))


def load_contract(path: str | Path, *, verify_files: bool = True, require_models: bool = True,
                  root: str | Path | None = None) -> Contract:
    """Read, validate and (``verify_files``) check the files a contract pins. The only contract loader.
    ``require_models=False``: the local model folders need not exist (``eagle4 workload http``: the server
    holds the models). ``root``: where the pinned files' relative paths resolve (default: the checkout
    holding the file). The hash never depends on it."""
    path = Path(path)
    if not path.is_file():
        raise ContractError(f"contract file {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ContractError(f"{path}: not a TOML contract: not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _toml_error(path, text, e) from None
    big = list(_out_of_range_ints(raw))
    if big:
        raise ContractError(f"{path}: invalid contract: {', '.join(big)}: integer outside the 64-bit range TOML allows")
    root = Path(root).resolve() if root is not None else _root_for(path.resolve())
    try:
        c = _kind_of(raw).model_validate({**raw, "source_path": str(path), "root_dir": str(root)})
    except ValidationError as e:
        raise _validation_error(path, e) from None
    except GateError as e:
        raise ContractError(f"{path}: invalid contract: {e}") from None
    if verify_files and isinstance(c, WorkloadContract):  # an engine contract pins no prompt or model files
        for i, f in enumerate(c.prompts.files):
            p = c.resolve(f.path)
            if not p.is_file():
                what = "is not a regular file" if p.exists() else "does not exist"
                raise ContractError(f"{path}: prompts.files[{i}].path: {f.path} {what} (looked at {p})")
            got = sha256_file(p)
            if got != f.sha256:
                raise ContractError(f"{path}: prompts.files[{i}].sha256: {f.path} has sha256 {got}, "
                                    f"the contract pins {f.sha256}; the prompt set changed")
            note_outside(root, f"prompts.files[{i}].path", p, got)
        for fld in ("target", "draft") if c.model.load == "local" and require_models else ():
            p = c.resolve(getattr(c.model, fld))
            if not (p / "config.json").exists():
                raise ContractError(f"{path}: model.{fld}: {p} has no config.json (a local model directory is needed)")
        if c.acceptance.source == "trace":
            p = c.resolve(c.acceptance.trace)
            if not p.is_file():
                what = "is not a regular file" if p.exists() else "does not exist"
                raise ContractError(f"{path}: acceptance.trace: {c.acceptance.trace} {what} (looked at {p})")
            got = sha256_file(p)
            if got != c.acceptance.sha256:
                raise ContractError(f"{path}: acceptance.sha256: {c.acceptance.trace} has sha256 {got}, the contract "
                                    f"pins {c.acceptance.sha256}; the accept-length trace changed")
            note_outside(root, "acceptance.trace", p, got)
    return c


# ---------------------------------------------------------------------------------------------
# what library functions accept as "a contract": a Contract, a path (loaded here), or a dict: a whole
# document (validated as its kind) or some sections of one (a PartialContract).


def as_contract(contract) -> Contract | PartialContract:
    """The typed contract of a Contract, a path (loaded by :func:`load_contract`, files not re-verified) or a
    dict (an engine document is validated as an EngineContract; any other dict is a PartialContract)."""
    if isinstance(contract, _ContractBase | PartialContract):
        return contract
    if isinstance(contract, (str, Path)):
        return load_contract(contract, verify_files=False)
    if isinstance(contract, Mapping):
        if "engine" in contract:
            return EngineContract.model_validate(dict(contract))
        return PartialContract(doc=dict(contract))
    raise TypeError(f"cannot read a contract from {type(contract).__name__}")


def contract_dict(contract) -> dict:
    """The canonical document of a contract (a partial one as given)."""
    return as_contract(contract).canonical()


def contract_sha256(contract) -> str:
    """The contract hash of a Contract, a contract file, or a dict of sections."""
    return as_contract(contract).sha256


def fpga_section(contract) -> FpgaSection:
    """The validated ``[fpga]`` section (defaults when the contract has none)."""
    return as_contract(contract).fpga


def trace_section(contract) -> TraceSection:
    """The validated ``[trace]`` section (defaults when the contract has none)."""
    return as_contract(contract).trace


def load_gates(contract) -> list[GateSpec]:
    """The validated ``[[gates]]`` of a contract (a Contract, a path, a dict, or the raw list)."""
    if isinstance(contract, list):
        return validate_gates(contract)
    return list(as_contract(contract).gates)


def baseline_card(contract) -> Card:
    """The card a contract's GPU figures are judged on (its ``[baseline] card``); ContractError if it names none."""
    c = as_contract(contract)
    if c.baseline is None:
        raise ContractError(f"{c.source_path or 'the contract'}: no [baseline] card: name the card its GPU figures "
                            "are judged on (a card of eagle4.cards.CARDS)")
    return card_named(c.baseline.card)


def _row_hash(r) -> str | None:
    if isinstance(r, Mapping):
        return r.get("contract_sha256")
    return getattr(r, "contract_sha256", None)


def ensure_same_contract(rows: Iterable, *, expected: str | None = None) -> str:
    """Return the one contract hash every row carries; raise ContractMismatch otherwise.

    ``rows``: dicts (CSV rows) or objects with a ``contract_sha256`` field. ``expected``: a hash
    the rows must match (e.g. the contract being gated)."""
    hashes: dict[str, int] = {}
    missing = 0
    for r in rows:
        h = _row_hash(r)
        if not h:
            missing += 1
            continue
        hashes[h] = hashes.get(h, 0) + 1
    if missing:
        raise ContractMismatch(f"{missing} result row(s) carry no contract_sha256; results without a contract "
                               "hash cannot be compared")
    if not hashes:
        raise ContractMismatch("no result rows to compare")
    if len(hashes) > 1:
        desc = ", ".join(f"{h[:12]} ({n} rows)" for h, n in sorted(hashes.items()))
        raise ContractMismatch(f"refusing to compare results produced under different benchmark contracts: {desc}. "
                               "Re-run both sides under the same contract.")
    (h,) = hashes
    if expected is not None and h != expected:
        raise ContractMismatch(f"results were produced under contract {h[:12]}, not the expected {expected[:12]}")
    return h


from eagle4.contract.render import render_markdown, write_markdown  # noqa: E402

__all__ = ["Contract", "WorkloadContract", "EngineContract", "PartialContract", "ContractError", "ContractMismatch", "load_contract", "ensure_same_contract",
           "render_markdown", "write_markdown", "sha256_file", "as_contract", "contract_dict", "contract_sha256",
           "canonical_sha256", "fpga_section", "trace_section", "load_gates", "FpgaSection", "TraceSection",
           "GateSpec", "GateError", "MIN_RUNS", "Baseline", "baseline_card"]
