"""One model behind an OpenAI-compatible API: its config, the client, usage and cost; and a fake server for tests."""

from pokebench.llm.client import ChatClient, Completion, ModelConfig, with_breakpoints
from pokebench.llm.errors import (ContextLengthExceeded, EndpointUnreachable, FatalAPIError, KeyRefused, LLMAPIError,
                                  MissingAPIKey, ModelConfigError, UnknownModel, UnsupportedParameter)
from pokebench.llm.usage import ImpossibleUsage, Prices, Usage, cost_usd, read_usage
from pokebench.llm.validation import ChatAnswer, MalformedAnswer, parse_answer_body

__all__ = ["ChatClient", "Completion", "ModelConfig", "with_breakpoints", "ContextLengthExceeded",
           "EndpointUnreachable", "FatalAPIError", "KeyRefused", "LLMAPIError", "MissingAPIKey", "ModelConfigError",
           "UnknownModel", "UnsupportedParameter", "ImpossibleUsage", "Prices", "Usage", "cost_usd", "read_usage",
           "ChatAnswer", "MalformedAnswer", "parse_answer_body"]
