"""What the LLM tests share: the test key's variable, a model config for the fake server, a fresh server per test."""

from __future__ import annotations

from typing import Any

import pytest

from pokebench.llm.fake_server import LocalOpenAI, hashed_policy

KEY_ENV = "POKEBENCH_TEST_KEY"


def fake_server_model(api: LocalOpenAI, prices: dict[str, float], **overrides: Any) -> dict[str, Any]:
    """A model config that talks to ``api`` (quick time-outs and back-offs), with ``overrides``."""
    return {"name": "test-model", "model": "local-test-model", "base_url": api.base_url, "api_key_env": KEY_ENV,
            "prices": prices, "timeout": 5, "max_attempts": 3, "backoff_base": 0.02, "backoff_max": 0.1,
            **overrides}


def reset_api(api: LocalOpenAI, monkeypatch: pytest.MonkeyPatch, secret: str) -> LocalOpenAI:
    """The module's server as new for one test: the key set, no requests seen, the default policy."""
    monkeypatch.setenv(KEY_ENV, secret)
    api.requests.clear()
    api.policy = hashed_policy
    return api
