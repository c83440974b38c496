"""The base of every contract section: unknown keys refused, values immutable, types strict.

Strict types: a TOML file gives native types, so ``2.5`` for an integer, a list for a number or a
string for a flag is an error naming the field rather than a silent conversion.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ContractError(ValueError):
    """The contract file is missing, malformed or inconsistent; the one-line message names the file
    and the field."""


class ContractMismatch(ValueError):
    """Results produced under different contracts were about to be compared."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
