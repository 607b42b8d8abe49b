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
errors (400, 401, 403, 404 ...) are not retried: they mean a wrong config, and raise a
:class:`FatalAPIError` that names the key's variable, the model id or the parameter
(:mod:`pokebench.llm.errors`); a context overflow raises :class:`ContextLengthExceeded`.

Every answer is checked (:mod:`pokebench.llm.validation`, :mod:`pokebench.llm.usage`):
a malformed body or impossible usage is retried like a transient error; usage that
stays impossible is dropped (``usage_dropped``), never priced. ``timeout`` is a
deadline for the whole answer, not for each read of the socket.

The API key is read from the environment variable the config names, is sent only in
the request header, and never appears in a message, a record or an exception.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import os
import random
import socket
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence
from urllib.parse import urlsplit

from pokebench.llm.delivery import settled_unless_cut_off, trace_delivery
from pokebench.llm.errors import (ContextLengthExceeded, EndpointUnreachable, FatalAPIError, KeyRefused, LLMAPIError,
                                  MissingAPIKey, ModelConfigError, UnknownModel, UnsupportedParameter, classify,
                                  error_fields, printable)
from pokebench.llm.usage import ImpossibleUsage, Prices, Usage, cost_usd, read_usage
from pokebench.llm.validation import MalformedAnswer, parse_answer_body
from pokebench.player.faults import fault_text
from pokebench.util import is_secret

if TYPE_CHECKING:  # imported where a request is made: about 0.9 s of CPU that a run without a model need not
    import openai  # pay at its start (every run imports this module for its configs and errors)

__all__ = ["ChatClient", "Completion", "ModelConfig", "Prices", "Usage", "cost_usd", "ModelConfigError",
           "MissingAPIKey", "EndpointUnreachable", "LLMAPIError", "FatalAPIError", "KeyRefused", "UnknownModel",
           "UnsupportedParameter", "ContextLengthExceeded", "retry_after_seconds", "with_breakpoints",
           "PREFLIGHT_QUESTION"]

#: The one message of the pre-flight request (:meth:`ChatClient.probe`).
PREFLIGHT_QUESTION = "Reply with the single word OK."

#: Used when a config says the key is optional (a local server) and the variable is unset.
NO_KEY = "no-key"

# The HTTP client under `openai` logs every request at INFO, and a Hydra run shows INFO: one
# line per decision would bury the progress bar. Quiet it unless someone chose its level.
for _name in ("httpx2", "httpx"):
    if logging.getLogger(_name).level == logging.NOTSET:
        logging.getLogger(_name).setLevel(logging.WARNING)


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class ModelConfig:
    """A model config (``conf/model/*.yaml``) as a checked value."""

    name: str
    model: str
    base_url: str
    api_key_env: str
    #: None when the config says ``prices: unknown`` (costs are then unknown, never zero).
    prices: Prices | None
    api_key_required: bool = True
    #: Who serves the model (``openai``, ``openrouter``, ``gemini``, ``local`` ...): recorded with each game.
    provider: str | None = None
    #: Mark the system prompt and the newest user message with ``cache_control: {type: ephemeral}``
    #: (Anthropic-style caching, which caches nothing without breakpoints).
    cache_breakpoints: bool = False
    #: Whether the provider counts reasoning tokens inside ``completion_tokens`` (OpenAI does).
    reasoning_in_completion: bool = True
    #: Stop starting games of this model once its spend would pass this many US dollars.
    budget_usd: float | None = None
    reasoning: str = "none"
    reasoning_levels: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"none": {}})
    request: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = 600.0
    max_in_flight: int | None = None
    max_attempts: int = 8
    backoff_base: float = 2.0
    backoff_max: float = 120.0
    retry_after_max: float = 600.0
    #: The longest answer kept: a longer one keeps its last this many characters (where its ACTION line is)
    #: before it enters the conversation or the store; the entry records its length (``answer_chars``).
    max_answer_chars: int = 32_000

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "ModelConfig":
        if not isinstance(raw, Mapping):
            raise ModelConfigError(f"a model config is a mapping (conf/model/*.yaml), not {type(raw).__name__}")
        missing = [k for k in ("model", "base_url", "api_key_env", "prices") if raw.get(k) in (None, "", "???")]
        if missing:
            hints = []
            if "model" in missing:
                hints.append("pick the model id on the command line: players.NAME.model.model=ID")
            if "prices" in missing:
                hints.append("give its list prices (players.NAME.model.prices.input=... cached_input, cache_write, "
                             "output in USD per million tokens) or say players.NAME.model.prices=unknown to run "
                             "with unknown costs")
            raise ModelConfigError(f"the model config {raw.get('name') or raw.get('model')!r} lacks "
                                   f"{', '.join(missing)}: " + "; ".join(hints or ["see conf/model/local.yaml"]))
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ModelConfigError(f"the model config has unknown key(s) {unknown}; known: {sorted(known)}")
        price = parse_prices(raw["prices"], raw.get("name") or raw["model"])
        values = dict(raw, prices=price, name=raw.get("name") or raw["model"])
        levels = values.get("reasoning_levels") or {"none": {}}
        reasoning = str(values.get("reasoning") or "none")
        if reasoning not in levels:
            raise ModelConfigError(f"model {values['name']}: reasoning '{reasoning}' is not one of its "
                                   f"reasoning_levels {sorted(levels)}")
        values.update(reasoning=reasoning, reasoning_levels={k: dict(v or {}) for k, v in levels.items()},
                      request=dict(values.get("request") or {}))
        for key in ("timeout", "backoff_base", "backoff_max", "retry_after_max", "budget_usd"):
            if values.get(key) is not None:
                try:
                    values[key] = float(values[key])
                except (TypeError, ValueError):
                    values[key] = math.nan
                if not math.isfinite(values[key]) or values[key] < 0:
                    raise ModelConfigError(f"model {values['name']}: {key} must be a number of "
                                           f"{'US dollars' if key == 'budget_usd' else 'seconds'} of at least 0, "
                                           f"not {raw[key]!r}")
        if int(values.get("max_attempts", 1)) < 1:
            raise ModelConfigError("max_attempts must be at least 1")
        if not isinstance(values.get("max_answer_chars", 1), int) or values.get("max_answer_chars", 1) < 1:
            raise ModelConfigError(f"model {values['name']}: max_answer_chars must be a positive whole number "
                                   f"(characters of an answer kept), not {values['max_answer_chars']!r}")
        if values.get("timeout", 1.0) <= 0:
            raise ModelConfigError(f"model {values['name']}: timeout must be positive (seconds for a whole answer)")
        return cls(**values)

    def answer_bound(self) -> float:
        """The longest one answer can take with all its attempts and waits (the arena's bound for a thinking player)."""
        waits = (self.max_attempts - 1) * max(self.backoff_max, self.retry_after_max)
        return self.max_attempts * self.timeout + waits

    def facts(self) -> dict[str, Any]:
        """What a game's record keeps about this model: who served it, how it was asked, at what prices."""
        return {"provider": self.provider, "base_url_host": urlsplit(self.base_url).hostname,
                "model": self.model, "reasoning": self.reasoning, "request": self.request_params(),
                "prices": self.prices.as_dict() if self.prices else "unknown",
                "cache_breakpoints": self.cache_breakpoints, "reasoning_in_completion": self.reasoning_in_completion}

    def api_key(self) -> str:
        """The key from the environment, or :class:`MissingAPIKey` saying which variable to set."""
        key = os.environ.get(self.api_key_env, "")
        if key:
            return key
        if not self.api_key_required:
            return NO_KEY
        state = "is empty" if self.api_key_env in os.environ else "is not set"
        raise MissingAPIKey(f"{self.api_key_env} {state}: the model {self.name} reads its API key from it. "
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


def parse_prices(prices: Any, name: str) -> Prices | None:
    """The config's ``prices``; ``unknown`` gives None (a run that accepts unknown costs)."""
    if prices == "unknown":
        return None
    if not isinstance(prices, Mapping):
        raise ModelConfigError(f"model {name}: prices must be a mapping (input, cached_input, cache_write, output in "
                               "USD per million tokens, read_on) or `prices: unknown`")
    try:
        values = {k: float(prices[k]) for k in ("input", "cached_input", "output")}
        write = prices.get("cache_write")
        if any(v < 0 for v in values.values()) or (write is not None and float(write) < 0):
            raise ValueError("a price is negative")
        return Prices(**values, read_on=str(prices["read_on"]) if prices.get("read_on") else None,
                      cache_write=float(write) if write is not None else None)
    except (KeyError, TypeError, ValueError) as err:
        raise ModelConfigError(f"model prices need input, cached_input and output in USD per million "
                               f"tokens (problem: {err!r}), or `prices: unknown`") from None


def with_breakpoints(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The conversation with Anthropic-style cache breakpoints on the system prompt and the newest user message.

    Two of the provider's four breakpoints: the system prompt is cached across games, the newest user
    message makes the whole conversation so far a cache entry that the next request reads (Anthropic
    looks back up to 20 blocks from a breakpoint for an earlier entry). The texts are unchanged.
    """
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if (i == 0 and message.get("role") == "system") or i == last_user:
            part = {"type": "text", "text": message["content"], "cache_control": {"type": "ephemeral"}}
            out.append({**message, "content": [part]})
        else:
            out.append(dict(message))
    return out


# --------------------------------------------------------------------------- usage and cost


# --------------------------------------------------------------------------- calls


@dataclass
class Completion:
    """One answer: its text, usage, timing, the retries it took, and what the provider said it served."""

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
    served_model: str | None = None  # the response's `model`: what the provider says answered
    system_fingerprint: str | None = None
    #: Why the usage was dropped (it stayed impossible through every attempt); None when it was kept.
    usage_dropped: str | None = None
    #: The answer's length when it was longer than ``max_answer_chars`` and cut; None when whole.
    answer_chars: int | None = None


_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, float], openai.AsyncOpenAI]]" = (
    weakref.WeakKeyDictionary())


def _shared_client(base_url: str, api_key: str, timeout: float) -> openai.AsyncOpenAI:
    """One client (one connection pool) per event loop and endpoint: all players of a process share it."""
    import openai
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    key = (base_url, api_key, timeout)
    if key not in per_loop:
        per_loop[key] = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0,
                                           http_client=openai.DefaultAsyncHttpxClient(
                                               event_hooks={"request": [trace_delivery]}))
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
        """`text` as it may be written (a record, a log, an error): the key blanked out when it is long enough
        to be a secret. Never applied to what is read: a one-letter key would maim the model's words."""
        return text.replace(self._key, "***") if is_secret(self._key) else text

    def said(self, text: str, limit: int = 300) -> str:
        """What the provider said (an error body, a failure), as printable text without the key, at most `limit` chars."""
        return printable(self.redact(text))[:limit]

    def _backoff(self, attempt: int) -> float:
        wait = min(self.config.backoff_max, self.config.backoff_base * 2 ** (attempt - 1))
        return wait * (0.75 + 0.25 * self._jitter.random())

    def _messages(self, messages: Sequence[Mapping[str, Any]]) -> list[Any]:
        return with_breakpoints(messages) if self.config.cache_breakpoints else [dict(m) for m in messages]

    async def _send(self, client: openai.AsyncOpenAI, messages: list[Any], params: Mapping[str, Any]) -> Any:
        """One request; the time-out is a deadline for the whole answer, however slowly it arrives."""
        async def request() -> Any:
            raw = await client.chat.completions.with_raw_response.create(
                model=self.config.model, messages=messages, **params)
            return raw.http_response.content

        with settled_unless_cut_off():  # cut off from outside, whether it was delivered is what its watcher reads
            return await asyncio.wait_for(request(), timeout=self.config.timeout)

    def _refused(self, err: openai.APIStatusError) -> LLMAPIError:
        c = self.config
        return classify(err.status_code, err.body, name=c.name, model=c.model, base_url=c.base_url,
                        key_env=c.api_key_env, detail=self.said(_short_error(err), 500))

    async def complete(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None,
                       *, max_attempts: int | None = None, params: Mapping[str, Any] | None = None) -> Completion:
        """One answer to the conversation `messages` (with `tools` offered: OpenAI's function tools).

        Raises :class:`LLMAPIError` when the API stays down or its answers stay malformed, a
        :class:`FatalAPIError` at once for an error no retry can fix, and :class:`ContextLengthExceeded`
        when the conversation no longer fits.
        """
        import openai  # its errors, below (see the import at the top)

        extra: dict[str, Any] = {"tools": list(tools)} if tools else {}
        client = _shared_client(self.config.base_url, self._key, self.config.timeout)
        attempts = max_attempts or self.config.max_attempts
        params = self._params if params is None else params
        body = self._messages(messages)
        retries: list[dict[str, Any]] = []
        start = time.monotonic()
        bad_usage: str | None = None
        for attempt in range(1, attempts + 1):
            sent = time.monotonic()
            try:
                content = await self._send(client, body, {**params, **extra})
                answer = parse_answer_body(content)
                try:
                    usage = read_usage(answer.usage, self.config.reasoning_in_completion)
                except ImpossibleUsage as err:
                    bad_usage = str(err)
                    if attempt < attempts:
                        raise
                    usage = Usage()  # dropped: counted, never priced
                else:
                    bad_usage = None
            except openai.APIStatusError as err:
                cause = f"HTTP {err.status_code}"
                detail = self.said(_short_error(err), 500)
                if err.status_code not in self.RETRY_STATUS and err.status_code < 500:
                    raise self._refused(err) from None
                wait = retry_after_seconds(err.response.headers)
                wait = min(wait, self.config.retry_after_max) if wait is not None else self._backoff(attempt)
            except (asyncio.TimeoutError, openai.APITimeoutError):
                cause, detail, wait = "timeout", f"no whole answer within {self.config.timeout:g} s", self._backoff(attempt)
            except openai.APIConnectionError as err:
                cause, detail, wait = "connection", self.said(fault_text(err.__cause__ or err)), self._backoff(attempt)
            except MalformedAnswer as err:
                cause, detail, wait = "malformed answer", self.said(str(err)), self._backoff(attempt)
            except ImpossibleUsage as err:
                cause, detail, wait = "impossible usage", self.said(str(err)), self._backoff(attempt)
            else:
                choice = answer.choices[0]
                text = choice.message.text()
                cap = self.config.max_answer_chars
                length = len(text) if text is not None and len(text) > cap else None
                calls = choice.message.tool_calls or []
                return Completion(
                    text=text[-cap:] if text is not None else text, usage=usage, answer_chars=length, latency_s=time.monotonic() - sent,
                    elapsed_s=time.monotonic() - start, attempts=attempt, retries=retries,
                    finish_reason=choice.finish_reason, response_id=answer.id, served_model=answer.model,
                    system_fingerprint=answer.system_fingerprint, usage_dropped=bad_usage,
                    tool_calls=[{"id": c.get("id", ""), "name": c["function"].get("name", ""),
                                 "arguments": c["function"].get("arguments") or ""}
                                for c in calls if isinstance(c, dict) and isinstance(c.get("function"), dict)])
            retries.append({"attempt": attempt, "cause": cause, "detail": detail,
                            "wait_s": round(wait, 3) if attempt < attempts else 0.0})
            if attempt < attempts:
                await asyncio.sleep(wait)
        last = retries[-1]
        raise LLMAPIError(f"{self.config.name}: the API at {self.config.base_url} failed {attempts} "
                          f"times; last: {last['cause']} ({last['detail']})")

    async def probe(self) -> Completion:
        """The pre-flight request: one short real question with the run's exact parameters.

        It proves the key, the model id and every parameter before any game (a 401, 404 or
        unsupported parameter raises the :class:`FatalAPIError` that names it).
        """
        return await self.complete([{"role": "user", "content": PREFLIGHT_QUESTION}],
                                   max_attempts=min(3, self.config.max_attempts))


def _short_error(err: openai.APIStatusError) -> str:
    """The provider's own error message (not the openai package's wrapper text)."""
    message, code, param = error_fields(err.body)
    extra = ", ".join(f"{k}: {v}" for k, v in (("code", code), ("param", param)) if v)
    return (message or str(err.message)) + (f" ({extra})" if extra else "")
