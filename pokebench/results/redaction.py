"""Redaction: nothing secret leaves a run, and no published cell runs as a spreadsheet formula.

Fields named like *key*/*token*/*secret* are dropped (token *counts* such as
``output_tokens`` are kept); the values of such environment variables are blanked out of
every written file as a last guard (:func:`redact_tree`). Text cells of the CSV files that a
spreadsheet would run as a formula (starting with ``= + - @``, a tab or a carriage return)
get a leading ``'`` (OWASP's advice); :func:`unneutralise` takes it off again when reading.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from pokebench.util import is_secret

__all__ = ["is_secret_name", "scrub", "scrub_frame", "secret_env_values", "without_secrets", "redact_tree",
           "neutralise", "neutralise_frame", "unneutralise"]

SECRET_NAME = re.compile(r"key|token|secret|passw|credential|authoriz|bearer|cookie", re.I)
COUNT_NAME = re.compile(r"tokens", re.I)  # input_tokens, output_tokens...: counts, not secrets

def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) or value is None


def is_secret_name(name: str, value: Any = None) -> bool:
    """True for a field that must not be published: named like a key, token, secret...

    Token counts (``output_tokens`` and the like, holding numbers) are not secrets.
    """
    if not SECRET_NAME.search(str(name)):
        return False
    return not (COUNT_NAME.search(str(name)) and _is_number(value))


def scrub(value: Any) -> Any:
    """A copy of nested dicts/lists without the fields named like secrets."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if not is_secret_name(k, v)}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


def scrub_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Drop the columns named like secrets (numeric ``*tokens*`` columns stay); nested
    values are scrubbed and written as JSON."""
    keep = []
    for col in df.columns:
        numeric = pd.api.types.is_numeric_dtype(df[col]) or df[col].map(_is_number).all()
        if SECRET_NAME.search(str(col)) and not (COUNT_NAME.search(str(col)) and numeric):
            continue
        keep.append(col)
    out = df[keep].copy()
    for col in out.columns:
        if out[col].dtype == object and out[col].map(lambda v: isinstance(v, (dict, list, tuple))).any():
            out[col] = out[col].map(lambda v: json.dumps(scrub(v), sort_keys=True)
                                    if isinstance(v, (dict, list, tuple)) else v)
    return out


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables named like secrets (long enough to be one)."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    return sorted({v for k, v in env.items() if SECRET_NAME.search(k) and is_secret(v)},
                  key=len, reverse=True)


def without_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment less every variable named like a secret (a model's key, the server's admin token): for a
    program of its own that needs none of them (Foul Play)."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if not SECRET_NAME.search(k)}


def redact_tree(root: Path, secrets: Sequence[str]) -> int:
    """Blank out `secrets` in every file under `root`; the number of files changed."""
    changed = 0
    needles = [s.encode() for s in secrets]
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        new = data
        for needle in needles:
            new = new.replace(needle, b"[redacted]")
        if new != data:
            path.write_bytes(new)
            changed += 1
    return changed


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula, with a leading ``'``; anything else unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def unneutralise(value: Any) -> Any:
    """The text :func:`neutralise` was given."""
    if isinstance(value, str) and value.startswith("'") and value[1:].startswith(FORMULA_START):
        return value[1:]
    return value


def neutralise_frame(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`neutralise` applied to every text column (numbers stay numbers)."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(neutralise)
    return out
