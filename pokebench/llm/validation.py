"""Every API answer is checked before it is used: a pydantic model of a chat completion.

A body that is not JSON, has no choices, or whose message is missing is a
:class:`MalformedAnswer`; the client retries it like a transient error and records
what it was. Usage is checked apart (:mod:`pokebench.llm.usage`), so that an
impossible count drops only the count, never the answer.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class MalformedAnswer(ValueError):
    """The body is not a chat completion; the message says what is wrong with it (never its full text)."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class AnswerMessage(_Lenient):
    role: str | None = None
    content: str | list[Any] | None = None
    tool_calls: list[Any] | None = None

    def text(self) -> str | None:
        if isinstance(self.content, list):  # content parts: keep the text ones
            return "".join(p.get("text", "") for p in self.content if isinstance(p, dict)) or None
        return self.content


class AnswerChoice(_Lenient):
    index: int | None = None
    message: AnswerMessage
    finish_reason: str | None = None


class ChatAnswer(_Lenient):
    """The fields PokéBench reads; others are allowed and ignored."""

    id: str | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    choices: list[AnswerChoice] = Field(min_length=1)
    usage: dict[str, Any] | None = None


def parse_answer_body(body: bytes | str) -> ChatAnswer:
    """The checked answer, or :class:`MalformedAnswer`."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError as err:
        raise MalformedAnswer(f"the body is not JSON ({err.msg} at {err.pos}, {len(body)} bytes)") from None
    except ValueError as err:  # bytes that are not UTF-8
        raise MalformedAnswer(f"the body is not JSON ({err}, {len(body)} bytes)") from None
    if not isinstance(data, dict):
        raise MalformedAnswer(f"the body is JSON {type(data).__name__}, not an object")
    try:
        return ChatAnswer.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise MalformedAnswer(f"{where or 'the body'}: {first['msg']} ({err.error_count()} problem(s))") from None
