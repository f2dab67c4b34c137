"""The request bodies of the gateway benchmarks (bench/gateway.sh,
bench/gateway_ab.sh), one JSON document a line: a chat completion, the
same as a stream, an Anthropic message and an OpenAI Responses request,
then those two as streams, each declaring 8 tools with JSON Schemas, as
agents send them (the gateway merges them with the policy's)."""

import json


def schema(i):
    return {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "units": {"enum": ["c", "f"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            f"tag{i}": {"type": "array", "items": {"type": "string", "format": "email"}},
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def main():
    names = ["get_weather"] + [f"tool_{i}" for i in range(1, 8)]
    openai = [
        {"type": "function", "function": {"name": n, "description": f"{n} tool", "parameters": schema(i)}}
        for i, n in enumerate(names)
    ]
    anthropic = [{"name": n, "description": f"{n} tool", "input_schema": schema(i)} for i, n in enumerate(names)]
    responses = [
        {"type": "function", "name": n, "description": f"{n} tool", "parameters": schema(i)}
        for i, n in enumerate(names)
    ]
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    print(json.dumps({"model": "valid", "messages": ask, "tools": openai}))
    print(json.dumps({"model": "valid", "stream": True, "messages": ask, "tools": openai}))
    print(json.dumps({"model": "valid", "max_tokens": 256, "messages": ask, "tools": anthropic}))
    print(json.dumps({"model": "valid", "input": ask, "tools": responses}))
    print(json.dumps({"model": "valid", "stream": True, "max_tokens": 256, "messages": ask, "tools": anthropic}))
    print(json.dumps({"model": "valid", "stream": True, "input": ask, "tools": responses}))


if __name__ == "__main__":
    main()
