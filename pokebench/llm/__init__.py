"""One model behind an OpenAI-compatible API: its config, the client, usage and cost; and a fake server for tests."""

from pokebench.llm.client import ChatClient, Completion, ModelConfig, ModelConfigError, MissingAPIKey, EndpointUnreachable, LLMAPIError, Prices, Usage, cost_usd

__all__ = ["ChatClient", "Completion", "ModelConfig", "ModelConfigError", "MissingAPIKey", "EndpointUnreachable", "LLMAPIError", "Prices", "Usage", "cost_usd"]
