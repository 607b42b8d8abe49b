"""One model behind an OpenAI-compatible chat API: its config, its calls with retries, their usage and cost.

Retries are ours, not the ``openai`` package's (the client is made with
``max_retries=0``): its built-in retries are invisible to the records, cap
``Retry-After`` at two minutes, and draw their jitter from the process-wide
``random`` module. Here a rate limit (429), a lock or request time-out (408, 409),
a server error (5xx), a connection failure and a time-out are retried with
exponential backoff (``backoff_base`` × 2^k, at most ``backoff_max`` seconds), a
``Retry-After`` / ``retry-after-ms`` header wins when the server sends one (up to
``retry_after_max``), and every retry is recorded with its cause. After
``max_attempts`` attempts :class:`LLMAPIError` is raised: the player's hooks turn it
into a harness error and the game is played again on the next start. Other HTTP
errors (400, 401, 403, 404 ...) are not retried: they mean a wrong config.

The API key is read from the environment variable the config names, is sent only in
the request header, and never appears in a message, a record or an exception.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import socket
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

import openai

#: Used when a config says the key is optional (a local server) and the variable is unset.
NO_KEY = "no-key"

# The HTTP client under `openai` logs every request at INFO, and a Hydra run shows INFO: one
# line per decision would bury the progress bar. Quiet it unless someone chose its level.
for _name in ("httpx2", "httpx"):
    if logging.getLogger(_name).level == logging.NOTSET:
        logging.getLogger(_name).setLevel(logging.WARNING)


class ModelConfigError(ValueError):
    """A model config is wrong or incomplete; the message names the key and the fix."""


class MissingAPIKey(ModelConfigError):
    """The environment variable that holds the model's API key is not set."""


class EndpointUnreachable(ModelConfigError):
    """Nothing accepts a connection at the model's base URL."""


class LLMAPIError(RuntimeError):
    """The API failed for good (after its retries, or with an error that retrying cannot fix)."""


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class Prices:
    """List prices in US dollars per million tokens."""

    input: float
    cached_input: float
    output: float
    read_on: str | None = None


@dataclass(frozen=True)
class ModelConfig:
    """A model config (``conf/model/*.yaml``) as a checked value."""

    name: str
    model: str
    base_url: str
    api_key_env: str
    prices: Prices
    api_key_required: bool = True
    reasoning: str = "none"
    reasoning_levels: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"none": {}})
    request: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = 600.0
    max_in_flight: int | None = None
    max_attempts: int = 8
    backoff_base: float = 2.0
    backoff_max: float = 120.0
    retry_after_max: float = 600.0

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "ModelConfig":
        if not isinstance(raw, Mapping):
            raise ModelConfigError(f"a model config is a mapping (conf/model/*.yaml), not {type(raw).__name__}")
        missing = [k for k in ("model", "base_url", "api_key_env", "prices") if raw.get(k) in (None, "", "???")]
        if missing:
            raise ModelConfigError(f"the model config lacks {', '.join(missing)} (see conf/model/local.yaml)")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ModelConfigError(f"the model config has unknown key(s) {unknown}; known: {sorted(known)}")
        prices = raw["prices"]
        try:
            price = Prices(float(prices["input"]), float(prices["cached_input"]), float(prices["output"]),
                           str(prices["read_on"]) if prices.get("read_on") else None)
        except (KeyError, TypeError, ValueError) as err:
            raise ModelConfigError(f"model prices need input, cached_input and output in USD per million "
                                   f"tokens (problem: {err!r})") from None
        values = dict(raw, prices=price, name=raw.get("name") or raw["model"])
        levels = values.get("reasoning_levels") or {"none": {}}
        reasoning = str(values.get("reasoning") or "none")
        if reasoning not in levels:
            raise ModelConfigError(f"model {values['name']}: reasoning '{reasoning}' is not one of its "
                                   f"reasoning_levels {sorted(levels)}")
        values.update(reasoning=reasoning, reasoning_levels={k: dict(v or {}) for k, v in levels.items()},
                      request=dict(values.get("request") or {}))
        for key in ("timeout", "backoff_base", "backoff_max", "retry_after_max"):
            if key in values:
                values[key] = float(values[key])
        if int(values.get("max_attempts", 1)) < 1:
            raise ModelConfigError("max_attempts must be at least 1")
        return cls(**values)

    def api_key(self) -> str:
        """The key from the environment, or :class:`MissingAPIKey` saying which variable to set."""
        key = os.environ.get(self.api_key_env, "")
        if key:
            return key
        if not self.api_key_required:
            return NO_KEY
        raise MissingAPIKey(f"{self.api_key_env} is not set: the model {self.name} reads its API key from it. "
                            f"export {self.api_key_env}=...")

    def check_reachable(self, timeout: float = 3.0) -> None:
        """Raise :class:`EndpointUnreachable` if nothing accepts a connection at the base URL (no request is sent)."""
        url = urlsplit(self.base_url)
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            socket.create_connection((url.hostname or "", port), timeout=timeout).close()
        except OSError as err:
            raise EndpointUnreachable(
                f"Cannot reach the model {self.name} at {self.base_url} ({err}). Start the OpenAI-compatible server "
                f"there, or give the model another base_url (conf/model/{self.name}.yaml; the `local` model reads "
                "POKEBENCH_BASE_URL).") from None

    def request_params(self) -> dict[str, Any]:
        """Fixed request parameters and those of the reasoning level (``extra_body`` merged, not replaced)."""
        params = {k: v for k, v in self.request.items()}
        for key, value in self.reasoning_levels[self.reasoning].items():
            if key == "extra_body" and isinstance(params.get("extra_body"), dict):
                params["extra_body"] = {**params["extra_body"], **value}
            else:
                params[key] = value
        return params


# --------------------------------------------------------------------------- usage and cost


@dataclass(frozen=True)
class Usage:
    """Token counts of one answer as the API reported them; None where the API said nothing."""

    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None

    @classmethod
    def from_api(cls, usage: Any) -> "Usage":
        if usage is None:
            return cls()

        def get(obj: Any, key: str) -> Any:
            if obj is None:
                return None
            return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)

        def as_int(value: Any) -> int | None:
            return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        return cls(as_int(get(usage, "prompt_tokens")),
                   as_int(get(get(usage, "prompt_tokens_details"), "cached_tokens")),
                   as_int(get(usage, "completion_tokens")),
                   as_int(get(get(usage, "completion_tokens_details"), "reasoning_tokens")))


def cost_usd(usage: Usage, prices: Prices) -> float | None:
    """The answer's cost at list prices; None when the input or output count is missing.

    ``input_tokens`` includes the cached tokens (the OpenAI convention): the cached part
    is priced at the cache price and the rest at the input price; a missing cached count
    prices all input at the input price. Reasoning tokens are part of the output tokens.
    """
    if usage.input_tokens is None or usage.output_tokens is None:
        return None
    cached = min(usage.cached_input_tokens or 0, usage.input_tokens)
    return ((usage.input_tokens - cached) * prices.input + cached * prices.cached_input
            + usage.output_tokens * prices.output) / 1_000_000


# --------------------------------------------------------------------------- calls


@dataclass
class Completion:
    """One answer: its text, usage, timing and the retries it took."""

    text: str | None
    usage: Usage
    latency_s: float  # the successful request, from sending it to its answer
    elapsed_s: float  # all attempts and waits
    attempts: int
    retries: list[dict[str, Any]]
    finish_reason: str | None = None
    response_id: str | None = None
    #: The tool calls of the answer, as ``{"id", "name", "arguments"}`` (arguments: the JSON text as sent).
    tool_calls: list[dict[str, str]] = field(default_factory=list)


_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, float], openai.AsyncOpenAI]]" = (
    weakref.WeakKeyDictionary())


def _shared_client(base_url: str, api_key: str, timeout: float) -> openai.AsyncOpenAI:
    """One client (one connection pool) per event loop and endpoint: all players of a process share it."""
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    key = (base_url, api_key, timeout)
    if key not in per_loop:
        per_loop[key] = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
    return per_loop[key]


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The server's requested wait: ``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP date."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        if name == "retry-after":
            try:
                return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
            except (TypeError, ValueError):
                pass
    return None


class ChatClient:
    """Sends chat requests for one model config; safe to share among the games of a process."""

    RETRY_STATUS = {408, 409, 429}

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self._key = config.api_key()
        self._params = config.request_params()
        self._jitter = random.Random()  # never the game's generator nor the global one

    def redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key and self._key != NO_KEY else text

    def _backoff(self, attempt: int) -> float:
        wait = min(self.config.backoff_max, self.config.backoff_base * 2 ** (attempt - 1))
        return wait * (0.75 + 0.25 * self._jitter.random())

    async def complete(self, messages: Sequence[Mapping[str, Any]],
                       tools: Sequence[Mapping[str, Any]] | None = None) -> Completion:
        """One answer to the conversation `messages` (with `tools` offered: OpenAI's function tools);
        raises :class:`LLMAPIError` when the API stays down."""
        extra: dict[str, Any] = {"tools": list(tools)} if tools else {}
        client = _shared_client(self.config.base_url, self._key, self.config.timeout)
        retries: list[dict[str, Any]] = []
        start = time.monotonic()
        for attempt in range(1, self.config.max_attempts + 1):
            sent = time.monotonic()
            try:
                response = await client.chat.completions.create(
                    model=self.config.model, messages=list(messages), **self._params, **extra)  # type: ignore[arg-type]
            except openai.APIStatusError as err:
                cause = f"HTTP {err.status_code}"
                detail = self.redact(str(err.message))[:500]
                if err.status_code not in self.RETRY_STATUS and err.status_code < 500:
                    raise LLMAPIError(f"{self.config.name}: the API refused the request ({cause}): {detail}") from None
                wait = retry_after_seconds(err.response.headers)
                wait = min(wait, self.config.retry_after_max) if wait is not None else self._backoff(attempt)
            except openai.APITimeoutError:
                cause, detail, wait = "timeout", f"no answer within {self.config.timeout:g} s", self._backoff(attempt)
            except openai.APIConnectionError as err:
                cause, detail, wait = "connection", self.redact(repr(err.__cause__ or err))[:300], self._backoff(attempt)
            else:
                choice = response.choices[0] if response.choices else None
                calls = (getattr(choice.message, "tool_calls", None) or []) if choice is not None else []
                return Completion(
                    text=choice.message.content if choice is not None else None,
                    usage=Usage.from_api(response.usage), latency_s=time.monotonic() - sent,
                    elapsed_s=time.monotonic() - start, attempts=attempt, retries=retries,
                    finish_reason=getattr(choice, "finish_reason", None), response_id=response.id,
                    tool_calls=[{"id": c.id, "name": c.function.name, "arguments": c.function.arguments or ""}
                                for c in calls if getattr(c, "function", None) is not None])
            retries.append({"attempt": attempt, "cause": cause, "detail": detail,
                             "wait_s": round(wait, 3) if attempt < self.config.max_attempts else 0.0})
            if attempt < self.config.max_attempts:
                await asyncio.sleep(wait)
        last = retries[-1]
        raise LLMAPIError(f"{self.config.name}: the API at {self.config.base_url} failed {self.config.max_attempts} "
                          f"times; last: {last['cause']} ({last['detail']})")
