"""The shapes of the check workload (bench/workload.py), by name."""
from .deep import Deep
from .formats import Formats
from .large import Large
from .openai import Anthropic, OpenAI, Responses, Stream
from .small import Small

SHAPES = {shape.name: shape for shape in [OpenAI, Anthropic, Responses, Stream, Small, Large, Deep, Formats]}
