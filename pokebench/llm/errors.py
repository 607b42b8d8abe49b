"""What can go wrong with a model's API, as exceptions that say what to do.

Errors that no retry can fix are :class:`~pokebench.player.faults.RunStopper`\\ s: the
pre-flight check stops before any game, and during a run the first one stops the run.
A context overflow is the model's limit, not a fault: its game ends as a loss.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from pokebench.player.faults import RunStopper


class ModelConfigError(ValueError):
    """A model config is wrong or incomplete; the message names the key and the fix."""


class MissingAPIKey(ModelConfigError):
    """The environment variable that holds the model's API key is not set."""


class EndpointUnreachable(ModelConfigError):
    """Nothing accepts a connection at the model's base URL."""


class LLMAPIError(RuntimeError):
    """The API failed for good (after its retries, or with an error that retrying cannot fix)."""


class FatalAPIError(LLMAPIError, RunStopper):
    """An answer no retry can change (HTTP 400, 401, 403, 404 ...): the run stops."""


class KeyRefused(FatalAPIError):
    """HTTP 401/403: the key is wrong, expired or not allowed this model."""


class UnknownModel(FatalAPIError):
    """HTTP 404, or a provider's "no such model": the id or the base URL's path is wrong."""


class UnsupportedParameter(FatalAPIError):
    """HTTP 400 naming a request parameter the model does not take."""


class ContextLengthExceeded(LLMAPIError):
    """The conversation no longer fits the model's context: the game ends as a loss (``context_length``)."""


_CONTEXT = re.compile(r"context[ _-]?(length|window|size)|maximum context|prompt is too long|too many (input )?tokens"
                      r"|exceeds? the (available )?context", re.IGNORECASE)
_UNKNOWN_MODEL = re.compile(r"model.{0,80}(not found|does not exist|not a valid model|unknown|no such|not supported)"
                            r"|(unknown|invalid) model", re.IGNORECASE)
_UNSUPPORTED = re.compile(r"unsupported[ _]parameter|unrecognized request argument|not supported|unknown (field|"
                          r"parameter|name)|extra (inputs|fields) (are )?not permitted|unexpected (keyword|field)",
                          re.IGNORECASE)
_PARAM_NAMES = [re.compile(p, re.IGNORECASE) for p in (
    r"""supplied:\s*['"`]?([A-Za-z_][\w.]*)""", r"""['"`]([A-Za-z_][\w.]*)['"`]\s+is not (supported|permitted)""",
    r"""(?:parameter|argument|field|name):?\s+['"`]?([A-Za-z_][\w.]*)""")]


def printable(text: str) -> str:
    """What a provider sent, safe to print: control and format characters (ANSI escapes, carriage returns,
    bidi overrides, newlines) shown as escapes such as ``\\x1b``, so a body cannot drive the terminal."""
    return "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in ("Cc", "Cf") else ch
                   for ch in text)


def error_fields(body: Any) -> tuple[str, str | None, str | None]:
    """(message, code, param) of an API error body (``{"error": {...}}`` or the inner object)."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if not isinstance(body, dict):
        return (str(body) if body is not None else ""), None, None
    code = body.get("code") or body.get("type")
    param = body.get("param")
    return str(body.get("message") or ""), (str(code) if code else None), (str(param) if param else None)


def classify(status: int, body: Any, *, name: str, model: str, base_url: str, key_env: str,
             detail: str) -> LLMAPIError:
    """The exception for an HTTP error that is not retried; its message names what to fix."""
    message, code, param = error_fields(body)
    text = f"{message} {code or ''}"
    said = f"(HTTP {status}: {detail})"
    if _CONTEXT.search(text) and status in (400, 413, 422):
        return ContextLengthExceeded(f"{name}: the conversation exceeds the model's context {said}")
    if status in (401, 403):
        return KeyRefused(f"{name}: the API refused the key in {key_env} {said}. Check that {key_env} holds a valid "
                          f"key for {base_url} and that it may use the model {model}.")
    if status == 404 or _UNKNOWN_MODEL.search(text):
        return UnknownModel(f"{name}: the model id '{model}' is unknown at {base_url}, or the base URL's path is "
                            f"wrong {said}. Fix `model` or `base_url` in its conf/model/*.yaml (or override "
                            f"players.NAME.model.model=...).")
    if status in (400, 422) and (param or _UNSUPPORTED.search(text)):
        found = param or next((m.group(1) for r in _PARAM_NAMES for m in [r.search(message)] if m), None)
        return UnsupportedParameter(f"{name}: the model {model} does not take the request parameter "
                                    f"'{found or '?'}' {said}. Remove it from `request` or the reasoning level's "
                                    "parameters in its conf/model/*.yaml.")
    return FatalAPIError(f"{name}: the API refused the request {said}; retrying cannot change that.")
