"""Log invariants of a run: patterns that must not (or must) appear in its logs, and counters parsed
from summary lines (``disabled_multitoken_other == 0``, ``tuned_hits / total >= 0.99``).

Logs are streamed line by line in bounded pieces (a line longer than ``MAX_LINE`` bytes is read in
pieces; at most ``max_bytes`` per file): memory stays constant, and a file cut off at the limit
never passes a must-not check (absence of a pattern was not proven). A failure quotes the offending
lines with file and line number. A counter value that is not a number is a malformed log: one-line
:class:`LogFormatError` naming the file, line and counter.
"""

from __future__ import annotations

import hashlib
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_LINE = 64 << 10
_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq,
        "!=": operator.ne}
_COUNTER = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(?:/\s*([A-Za-z_][\w.]*)\s*)?(>=|<=|==|!=|>|<)\s*"
                      r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")
_PAIR = re.compile(r"([A-Za-z_][\w.]*)\s*[=:]\s*([^\s,;]+)")


class LogFormatError(ValueError):
    """A log is malformed where a counter is read; one line naming file:line and the counter."""


@dataclass(frozen=True)
class Counter:
    num: str
    den: str | None
    op: str
    threshold: float

    @classmethod
    def parse(cls, expr: str) -> Counter:
        m = _COUNTER.match(expr)
        if not m:
            raise ValueError(f"counter {expr!r} is not 'name OP number' or 'name / name OP number'")
        return cls(m.group(1), m.group(2), m.group(3), float(m.group(4)))

    def __str__(self) -> str:
        return f"{self.num}{' / ' + self.den if self.den else ''} {self.op} {self.threshold:g}"


class LogInvariants(BaseModel):
    """What a gate demands of its run logs (``[gates.logs]`` in the contract)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: list[str] = Field(min_length=1, description="globs under the results folder; each must match a file")
    must_not: list[str] = Field(default_factory=list, description="regexes no line may match")
    must: list[str] = Field(default_factory=list, description="regexes some line must match")
    must_scope: Literal["each", "any"] = Field("each", description="'each' log file, or 'any' of them, holds every must")
    summary: str | None = Field(None, description="regex selecting summary lines whose key=value pairs are counters")
    counters: list[str] = Field(default_factory=list, description="'name OP number' or 'a / b OP number', on every summary line")
    max_bytes: int = Field(1 << 30, ge=1, description="read limit per file; a file over it fails (absence unproven)")
    max_quotes: int = Field(5, ge=1, le=100)

    @field_validator("must_not", "must", "summary")
    @classmethod
    def _regexes(cls, v):
        for p in [v] if isinstance(v, str) else v or []:
            try:
                re.compile(p)
            except re.error as e:
                raise ValueError(f"pattern {p!r} is not a regex: {e}") from None
        return v

    @field_validator("counters")
    @classmethod
    def _counters(cls, v):
        for c in v:
            Counter.parse(c)
        return v

    @model_validator(mode="after")
    def _need_summary(self):
        if self.counters and not self.summary:
            raise ValueError("counters need 'summary' (the regex of the lines they are read from)")
        if not (self.must_not or self.must or self.counters):
            raise ValueError("declare at least one of must_not, must, counters")
        return self

    def parsed_counters(self) -> list[Counter]:
        return [Counter.parse(c) for c in self.counters]


@dataclass
class LogReport:
    ok: bool
    reasons: list[str] = field(default_factory=list)  # violations: forbidden / missing required lines, counters
    unproven: list[str] = field(default_factory=list)  # no evidence: no log file, no summary line, read limit
    files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256 of the bytes read
    summaries: int = 0


def _lines(path: Path, max_bytes: int):
    """(line number, raw bytes, cut) over a file in pieces of at most ``MAX_LINE`` bytes, stopping at
    ``max_bytes``; the last item has ``cut`` true when bytes were left unread."""
    read, no, at_start = 0, 0, True
    with open(path, "rb") as fh:
        while True:
            if read >= max_bytes:
                if fh.read(1):
                    yield no, b"", True
                return
            raw = fh.readline(min(MAX_LINE, max_bytes - read))
            if not raw:
                return
            if at_start:
                no += 1
            at_start = raw.endswith(b"\n")
            read += len(raw)
            yield no, raw, False


def _quote(where: str, text: str) -> str:
    text = text.strip()
    return f"{where}: {text[:200]}{'...' if len(text) > 200 else ''}"


def check_logs(spec: LogInvariants, base_dir) -> LogReport:
    """Check ``spec`` against the logs its globs select under ``base_dir``."""
    base = Path(base_dir)
    rep = LogReport(ok=True)
    paths: list[Path] = []
    for pat in spec.files:
        hit = sorted(p for p in base.glob(pat) if p.is_file())
        if not hit:
            rep.unproven.append(f"no log file matches {pat!r} under {base}")
        paths.extend(p for p in hit if p not in paths)
    must_not = [(p, re.compile(p)) for p in spec.must_not]
    must = [(p, re.compile(p)) for p in spec.must]
    summary = re.compile(spec.summary) if spec.summary else None
    counters = spec.parsed_counters()
    bad: dict[str, list[str]] = {}
    seen_any: set[str] = set()
    for path in paths:
        rel = path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)
        h = hashlib.sha256()
        seen: set[str] = set()
        for no, raw, cut in _lines(path, spec.max_bytes):
            if cut:
                rep.unproven.append(f"{rel}: read limit of {spec.max_bytes} bytes reached at line {no}; the rest "
                                   "was not checked, so the absence of forbidden lines is not proven")
                break
            h.update(raw)
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            for p, rx in must_not:
                if rx.search(text):
                    bad.setdefault(f"forbidden {p!r}", []).append(_quote(f"{rel}:{no}", text))
            for p, rx in must:
                if p not in seen and rx.search(text):
                    seen.add(p)
            if summary is not None and summary.search(text):
                rep.summaries += 1
                pairs = dict(_PAIR.findall(text))
                for c in counters:
                    vals = []
                    for name in (c.num, c.den):
                        if name is None:
                            continue
                        if name not in pairs:
                            bad.setdefault(f"counter {c}", []).append(_quote(f"{rel}:{no}", f"(no '{name}') {text}"))
                            break
                        try:
                            vals.append(float(pairs[name]))
                        except ValueError:
                            raise LogFormatError(f"{path}:{no}: counter '{name}': {pairs[name]!r} is not a number") from None
                    else:
                        if c.den is not None and vals[1] == 0:
                            bad.setdefault(f"counter {c}", []).append(_quote(f"{rel}:{no}", f"({c.den} = 0) {text}"))
                            continue
                        v = vals[0] / vals[1] if c.den is not None else vals[0]
                        if not _OPS[c.op](v, c.threshold):
                            bad.setdefault(f"counter {c}", []).append(_quote(f"{rel}:{no}", f"(= {v:.6g}) {text}"))
        rep.files[rel] = h.hexdigest()
        seen_any |= seen
        if spec.must_scope == "each":
            for p, _ in must:
                if p not in seen:
                    rep.reasons.append(f"{rel}: no line matches required {p!r}")
    if spec.must_scope == "any" and paths:
        for p, _ in must:
            if p not in seen_any:
                rep.reasons.append(f"no line of {sorted(rep.files)} matches required {p!r}")
    if counters and paths and rep.summaries == 0:
        rep.unproven.append(f"no summary line matches {spec.summary!r}: counters {spec.counters} unchecked")
    for what, quotes in bad.items():
        more = len(quotes) - spec.max_quotes
        rep.reasons.append(f"{what}: {len(quotes)} offending line(s): " + " | ".join(quotes[:spec.max_quotes])
                           + (f" | ... {more} more" if more > 0 else ""))
    rep.ok = not (rep.reasons or rep.unproven)
    return rep
