"""A local, scriptable OpenAI-compatible chat server, for tests, benchmarks and prompt samples.

It speaks the real wire protocol of ``POST /v1/chat/completions`` (the ``openai``
client cannot tell it from a provider): a ``chat.completion`` JSON with
``choices[0].message.content`` and ``usage`` (``prompt_tokens``,
``completion_tokens``, ``prompt_tokens_details.cached_tokens``,
``completion_tokens_details.reasoning_tokens``). What it answers is up to a
*policy*: a function that gets each :class:`ChatRequest` and returns the answer's
text or a :class:`Reply` (an HTTP error such as 429 with ``Retry-After``, a delay
to provoke time-outs, a connection closed unanswered, usage with fields left out). Every request is recorded.

Token counts are estimates (4 characters a token). Prompt caching is simulated
(``cache=``): ``"prefix"`` (automatic caching, as OpenAI, Gemini, vLLM do: the
cached tokens are those of the longest run of leading messages that an earlier
request started with), ``"breakpoints"`` (Anthropic-style: a prefix is written to the
cache only where a message carries ``cache_control``, and read only up to the
request's last breakpoint; writes are reported apart), or ``"none"``. ``usage_shape=``
picks how usage is reported: ``"openai"``, ``"openrouter"`` (with
``cache_write_tokens`` and its own ``cost``), or ``"anthropic"``
(``cache_read_input_tokens`` / ``cache_creation_input_tokens``).

    with LocalOpenAI(policy=first_action_policy) as api:
        ... base_url=api.base_url ...
        api.requests[-1].messages
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

#: Fill a Reply's usage from the estimates (the default).
AUTO = "auto"


@dataclass
class Reply:
    """What the server does with one request."""

    text: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (longer than the client's timeout: a time-out)
    usage: dict[str, Any] | str | None = AUTO  # AUTO, an explicit usage object, or None to leave it out
    reasoning_tokens: int = 0
    error: str | None = None  # the error message of a non-200 reply
    #: Tool calls of the answer: ``{"name": ..., "arguments": {...}}`` each (ids are made up).
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    error_code: str | None = None  # its `code` (e.g. "context_length_exceeded", "unsupported_parameter")
    error_param: str | None = None  # its `param`
    body: bytes | None = None  # sent as it is instead of a chat completion (malformed answers)
    drip: float = 0.0  # seconds between the bytes of the body (an answer that trickles in)
    message: dict[str, Any] | None | str = AUTO  # the choice's message: AUTO, an object, or None (`message: null`)
    hang_up: bool = False  # close the connection without an answer (after `delay`): a server or proxy that drops it


@dataclass
class ChatRequest:
    """One request as the server received it."""

    index: int
    body: dict[str, Any]
    headers: dict[str, str]  # names in lower case
    received_at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The function tools the request offers (OpenAI's ``tools``)."""
        return list(self.body.get("tools") or [])

    @property
    def last_user_message(self) -> str:
        return next((text_of(m.get("content")) for m in reversed(self.messages) if m.get("role") == "user"), "")


def text_of(content: Any) -> str:
    """A message's text, whether its content is a string or a list of parts (with cache breakpoints)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def has_breakpoint(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("cache_control") for p in content)


Policy = Callable[[ChatRequest], Union[Reply, str]]


def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


# --------------------------------------------------------------------------- policies


def legal_actions_in(request: ChatRequest) -> list[str]:
    """The numbered legal actions of the latest message that lists them ("move Earthquake", ...)."""
    for message in reversed(request.messages):
        content = text_of(message.get("content"))
        if message.get("role") == "user" and "YOUR LEGAL ACTIONS" in content:
            block = content.rsplit("YOUR LEGAL ACTIONS", 1)[1]
            return [m.group(1) for m in re.finditer(r"^\d+\. (.+)$", block, re.MULTILINE)]
    return []


def first_action_policy(request: ChatRequest) -> str:
    """Always action 1 (the first move, or the first switch when a switch is forced)."""
    return "ACTION: 1\nREASON: The first listed action."


def hashed_policy(request: ChatRequest) -> str:
    """A move (a switch only when forced), picked by a hash of the latest message: deterministic, legal, varied."""
    actions = legal_actions_in(request)
    if not actions:
        return "ACTION: 1\nREASON: No list found."
    moves = [i for i, a in enumerate(actions, 1) if a.startswith("move ") and "Terastallize" not in a] or \
        list(range(1, len(actions) + 1))
    digest = int(hashlib.sha256(request.last_user_message.encode()).hexdigest(), 16)
    pick = moves[digest % len(moves)]
    return f"ACTION: {pick}\nREASON: {actions[pick - 1]} looks fine."


# --------------------------------------------------------------------------- the server


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a request cancelled, a game voided) is no error of the server's; the standard
        library would print a traceback for it."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LocalOpenAI:
    """The server in a background thread; use as a context manager. ``base_url`` ends in ``/v1``."""

    def __init__(self, policy: Policy | None = None, host: str = "127.0.0.1", port: int = 0,
                 model: str = "local-test-model", served_model: str | None = None, cache: str = "prefix",
                 usage_shape: str = "openai", prices: dict[str, float] | None = None,
                 system_fingerprint: str | None = None) -> None:
        if cache not in ("prefix", "breakpoints", "none") or usage_shape not in ("openai", "openrouter", "anthropic"):
            raise ValueError(f"unknown cache {cache!r} or usage shape {usage_shape!r}")
        self.policy: Policy = policy or first_action_policy
        self.model = model
        self.served_model = served_model  # the `model` answered (a dated id behind an alias); None: the one asked
        self.cache = cache
        self.usage_shape = usage_shape
        self.prices = prices  # USD per million (input, cached_input, cache_write, output) for OpenRouter's `cost`
        self.system_fingerprint = system_fingerprint
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()
        self._seen_prefixes: set[str] = set()
        self._server = _Server((host, port), self._handler_class())
        self._thread: threading.Thread | None = None

    # lifecycle -----------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str), "an IPv4 server's address is (host text, port)"
        return f"http://{host}:{port}/v1"

    def start(self) -> "LocalOpenAI":
        self._thread = threading.Thread(target=self._server.serve_forever, name="local-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "LocalOpenAI":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # answering -----------------------------------------------------------------------------------
    def _cached_tokens(self, messages: list[dict[str, Any]]) -> tuple[int, int, int]:
        """(prompt tokens, cache reads, cache writes) of a request under the simulated cache; remembers its prefixes."""
        digest = hashlib.sha256()
        counts, hashes = [], []
        for message in messages:
            content = text_of(message.get("content"))
            digest.update(json.dumps([message.get("role"), content]).encode())
            hashes.append(digest.copy().hexdigest())
            counts.append(estimate_tokens(content) + 4)
        total = sum(counts)
        if self.cache == "none":
            return total, 0, 0
        with self._lock:
            if self.cache == "prefix":
                hit = max((i + 1 for i, h in enumerate(hashes) if h in self._seen_prefixes), default=0)
                self._seen_prefixes.update(hashes)
                return total, sum(counts[:hit]), 0
            marks = [i for i, m in enumerate(messages) if has_breakpoint(m)]
            if not marks:  # nothing marked: Anthropic caches nothing
                return total, 0, 0
            hit = max((i + 1 for i, h in enumerate(hashes) if h in self._seen_prefixes and i <= marks[-1]), default=0)
            written = sum(counts[hit:marks[-1] + 1])
            self._seen_prefixes.update(hashes[i] for i in marks)
        return total, sum(counts[:hit]), written

    def _usage(self, reply: Reply, messages: list[dict[str, Any]]) -> dict[str, Any]:
        prompt_tokens, cached, written = self._cached_tokens(messages)
        completion = (estimate_tokens(reply.text or "") + reply.reasoning_tokens
                      + sum(estimate_tokens(json.dumps(c)) for c in reply.tool_calls))
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                                 "total_tokens": prompt_tokens + completion,
                                 "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens}}
        if self.usage_shape == "anthropic":
            usage.update(cache_read_input_tokens=cached, cache_creation_input_tokens=written)
        else:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        if self.usage_shape == "openrouter":
            usage["prompt_tokens_details"]["cache_write_tokens"] = written
            if self.prices:
                p = self.prices
                usage["cost"] = ((prompt_tokens - cached - written) * p["input"] + cached * p["cached_input"]
                                 + written * p.get("cache_write", p["input"]) + completion * p["output"]) / 1e6
        return usage

    def respond(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], Any, Reply]:
        with self._lock:
            request = ChatRequest(len(self.requests), body, headers, time.time())
            self.requests.append(request)
        reply = self.policy(request)
        if isinstance(reply, str):
            reply = Reply(text=reply)
        if reply.body is not None:
            return reply.status, reply.headers, reply.body, reply
        if reply.status != 200:
            kind = {429: "rate_limit_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 400: "invalid_request_error"}.get(reply.status, "server_error")
            error = {"error": {"message": reply.error or f"local test error {reply.status}", "type": kind,
                               "code": reply.error_code, "param": reply.error_param}}
            return reply.status, reply.headers, error, reply
        usage = self._usage(reply, request.messages) if reply.usage == AUTO else reply.usage
        message: Any = {"role": "assistant", "content": reply.text} if reply.message == AUTO else reply.message
        if reply.tool_calls and isinstance(message, dict):
            message["tool_calls"] = [
                {"id": f"call_{request.index}_{n}", "type": "function",
                 "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))}}
                for n, call in enumerate(reply.tool_calls)]
        response: dict[str, Any] = {
            "id": f"chatcmpl-local-{request.index}", "object": "chat.completion", "created": int(time.time()),
            "model": self.served_model or body.get("model", self.model),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if reply.tool_calls else "stop", "logprobs": None}],
        }
        if self.system_fingerprint:
            response["system_fingerprint"] = self.system_fingerprint
        if usage is not None:
            response["usage"] = usage
        return 200, reply.headers, response, reply

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _send(self, status: int, headers: dict[str, str], payload: Any, drip: float = 0.0) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    if drip:
                        for i in range(len(data)):
                            self.wfile.write(data[i:i + 1])
                            self.wfile.flush()
                            time.sleep(drip)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a time-out)
                    pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {}, {"object": "list", "data": [{"id": api.served_model or api.model,
                                                                        "object": "model"}]})
                else:
                    self._send(404, {}, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if len(raw) < length:  # the client went away mid-request (a killed run): nothing to answer
                    self.close_connection = True
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {}, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {}, {"error": {"message": "the body is not JSON"}})
                    return
                status, headers, payload, reply = api.respond(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.hang_up:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self._send(status, headers, payload, reply.drip)

        return Handler
