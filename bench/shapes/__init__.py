"""The shapes of the check workload (bench/workload.py), by name."""
from .deep import Deep
from .formats import Formats
from .large import Large, LargeAnthropic
from .numbers import Numbers
from .openai import (Anthropic, AnthropicRequest, AnthropicThinking, Bedrock, BedrockStream, BedrockThinking, ChatSse, Gemini, GeminiSse,
                     GeminiThinking, MessagesSse, OpenAI, OpenAIRequest, OpenAIThinking, Responses, ResponsesSse, VercelSse)
from .small import Small

SHAPES = {shape.name: shape for shape in [OpenAI, Anthropic, Responses, Gemini, Bedrock, ChatSse, MessagesSse, ResponsesSse, GeminiSse, BedrockStream, VercelSse, Small, Large, Deep, Formats, Numbers,
                                             OpenAIThinking, AnthropicThinking, GeminiThinking, BedrockThinking, LargeAnthropic,
                                             OpenAIRequest, AnthropicRequest]}
