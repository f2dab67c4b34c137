"""What every workload shape shares: random values, the policy's YAML, the
two wire formats (OpenAI Chat Completions and Anthropic Messages
responses), the defects every shape can have, and the generator loop."""
import base64
import json
import os
import random
import string
import sys

# --- values ------------------------------------------------------------------


class Values:
    def __init__(self, rng, text="plain"):
        self.r = rng
        # How the free text is written (`workload.py --text`): see TEXTS.
        self.text = text

    def pick(self, seq):
        return self.r.choice(seq)

    def maybe(self, p=0.5):
        return self.r.random() < p

    def alnum(self, n, alphabet=string.ascii_letters + string.digits):
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def email(self, first, last, domains):
        return f"{self.pick(first)}.{self.pick(last)}@{self.pick(domains)}"

    def words(self, words, lo, hi):
        text = " ".join(self.pick(words) for _ in range(self.r.randint(lo, hi)))
        return text[0].upper() + text[1:]

    def date(self):
        return f"2026-{self.r.randint(1, 12):02d}-{self.r.randint(1, 28):02d}"

    def date_time(self):
        zone = self.pick(["Z", "+02:00", "-05:00", "+09:00"])
        return f"{self.date()}T{self.r.randint(0, 23):02d}:{self.pick(['00', '15', '30', '45'])}:00{zone}"

    def uuid(self):
        h = self.alnum(32, "0123456789abcdef")
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{self.pick('89ab')}{h[17:20]}-{h[20:]}"


def compact(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


LAYOUTS = ("compact", "spaced", "indent")

# How a shape's free text (cities, subjects, bodies) is written: "plain" as
# it always was; "unicode" in other scripts (accented Latin, Cyrillic,
# Greek, CJK, Hangul, Arabic, emoji), as UTF-8; "escaped" the same text with
# every character past ASCII a `\uXXXX` escape in the arguments text, as
# Python's `json.dumps` writes it by default. Only shapes with such text
# (`Shape.free_text`) take the two others.
TEXTS = ("plain", "unicode", "escaped")


def ascii_compact(value):
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def lay_out(body, layout):
    """`body` (compact JSON) laid out as `layout`: "compact" as it is,
    "spaced" with Python's default separators (`, ` and `: `), "indent" two
    spaces a level with a line a member (as the OpenAI and Gemini APIs
    serve their answers). Only whitespace between tokens changes: every
    string (an `arguments` string too) and every key, twice or not, stays
    byte for byte as it was."""
    if layout == "compact":
        return body
    out, depth, i, n = [], 0, 0, len(body)
    while i < n:
        c = body[i]
        if c == '"':
            j = i + 1
            while body[j] != '"':
                j += 2 if body[j] == "\\" else 1
            out.append(body[i:j + 1])
            i = j + 1
            continue
        if layout == "spaced":
            out.append(", " if c == "," else ": " if c == ":" else c)
        elif c in "{[" and i + 1 < n and body[i + 1] in "}]":
            out.append(body[i:i + 2])  # empty, as json.dumps writes it
            i += 1
        elif c in "{[":
            depth += 1
            out.append(c + "\n" + "  " * depth)
        elif c in "}]":
            depth -= 1
            out.append("\n" + "  " * depth + c)
        elif c == ",":
            out.append(",\n" + "  " * depth)
        else:
            out.append(": " if c == ":" else c)
        i += 1
    return "".join(out)


def obj(properties, required=(), closed=False, **extra):
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    schema.update(extra)
    return schema


# --- the policy, as YAML -----------------------------------------------------

PLAIN_KEY = set(string.ascii_letters + string.digits + "_")


def yaml(value, indent=0):
    """Block YAML for dicts and lists; every string double-quoted (JSON
    escapes are valid YAML), short scalar lists in flow style."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        lines = []
        for key, item in value.items():
            key = key if set(key) <= PLAIN_KEY else json.dumps(key)
            if isinstance(item, (dict, list)) and item and not is_flow(item):
                lines.append(f"{pad}{key}:\n{yaml(item, indent + 2)}")
            else:
                lines.append(f"{pad}{key}: {yaml(item, indent + 2)}")
        return "\n".join(lines)
    if isinstance(value, list):
        if is_flow(value):
            return "[" + ", ".join(json.dumps(x) for x in value) + "]"
        return "\n".join(f"{pad}- {yaml(item, indent + 2).lstrip()}" for item in value)
    return json.dumps(value)


def is_flow(value):
    return isinstance(value, list) and all(not isinstance(x, (dict, list)) for x in value)


# --- wire formats --------------------------------------------------------------
# A call is (id characters, name sent, arguments text).


def chat_completion(i, v, calls, reasoning=False):
    """One OpenAI Chat Completions response carrying `calls`, as a line;
    with `reasoning`, the model's thought in the message's
    `reasoning_content`, as DeepSeek, vLLM and OpenRouter send it."""
    prompt = v.r.randint(300, 4000)
    completion = v.r.randint(15, 60) * len(calls)
    body = {
        "id": "chatcmpl-" + v.alnum(29),
        "object": "chat.completion",
        "created": 1767225600 + i * 37,
        "model": v.pick(["gpt-4o-2024-08-06", "gpt-4.1-mini-2025-04-14", "gpt-4o-mini-2024-07-18"]),
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": None,
                        "tool_calls": [{"id": "call_" + cid, "type": "function",
                                        "function": {"name": name, "arguments": text}}
                                       for cid, name, text in calls],
                        "refusal": None, "annotations": []},
            "logprobs": None,
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
        "service_tier": "default",
        "system_fingerprint": "fp_" + v.alnum(10, "0123456789abcdef"),
    }
    if reasoning:
        message = body["choices"][0]["message"]
        body["choices"][0]["message"] = {"role": "assistant", "reasoning_content": thinking(i)[0],
                                         **{k: m for k, m in message.items() if k != "role"}}
    return compact(body)


THOUGHTS = ["The user wants this done now, so I should call the tool with what they gave.",
            "First I check which tool fits the request and which arguments it needs.",
            "The amount and the currency are given; the reference is optional.",
            "I could ask for the missing detail, but the request is clear enough.",
            "Two lookups are independent, so both calls can go out at once.",
            "The date is relative: today is the first of the month, so next Friday is the fifth.",
            "Let me make sure the identifier is the one from the earlier message."]


def thinking(i):
    """What a reasoning model sends before its calls in payload i: its
    thought (one to six sentences) and the signature that seals it (150 to
    600 random bytes in base64), drawn apart from the payload's other
    draws, so that the calls and defects are those of the shape without
    thinking."""
    r = random.Random(1_000_003 * i + 7)
    text = " ".join(r.choice(THOUGHTS) for _ in range(r.randint(1, 6)))
    signature = base64.b64encode(bytes(r.getrandbits(8) for _ in range(r.randint(150, 600)))).decode()
    return text, signature


CLAUDE_MODELS = ["claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-opus-4-1-20250805"]
OPENERS = ["I'll take care of that.", "Let me look into this for you.", "Sure, one moment.",
           "I'll do that now, step by step.", "Good idea: let me check first."]


def tool_use_blocks(calls, extra):
    """An assistant turn's blocks for `calls` (a `text` block first four
    times in five), each `tool_use` block's `input` a placeholder, and the
    inputs `with_inputs` puts in their place."""
    content = []
    if extra.random() < 0.8:
        content.append({"type": "text", "text": extra.choice(OPENERS)})
    inputs = []
    for k, (cid, name, text) in enumerate(calls):
        content.append({"type": "tool_use", "id": "toolu_01" + cid[:22], "name": name,
                        "input": f"\x00input{k}\x00"})
        inputs.append(input_text(text))
    return content, inputs


def with_inputs(line, inputs):
    """`line` with each input placeholder (`\\x00input{k}\\x00`) replaced
    by its input as written: the object as sent (a key twice stays
    twice), or the text as a string when it is not a JSON object."""
    for k, raw in enumerate(inputs):
        line = line.replace(compact(f"\x00input{k}\x00"), raw, 1)
    return line


def message(i, v, calls, extra, reasoning=False):
    """The same calls as one Anthropic Messages response, as a line: a
    `text` block (four times in five), then one `tool_use` block a call
    whose `input` is the arguments object itself, sent as written (a key
    twice stays twice). Arguments that are not a JSON object (a call cut
    short, a Python dict) are sent as a string, which is what a client
    that stores the streamed `partial_json` unparsed sends. The random
    draws are those of `chat_completion`, so payload i holds the same
    calls in both formats; what only this format has comes from `extra`.
    With `reasoning`, a `thinking` block (extended thinking) comes first."""
    prompt = v.r.randint(300, 4000)
    completion = v.r.randint(15, 60) * len(calls)
    msg_id = v.alnum(29)
    model = v.pick(CLAUDE_MODELS)  # the same draw as the OpenAI model
    v.alnum(10, "0123456789abcdef")  # the system fingerprint OpenAI sends
    content, inputs = tool_use_blocks(calls, extra)
    if reasoning:
        thought, signature = thinking(i)
        content.insert(0, {"type": "thinking", "thinking": thought, "signature": signature})
    body = {
        "id": "msg_01" + msg_id[:22],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": extra.choice([0, 0, 1024, 2048]),
                  "output_tokens": completion, "service_tier": "standard"},
    }
    return with_inputs(compact(body), inputs)


SYSTEM_PROMPTS = [
    "You are a helpful assistant for a travel and banking app. Use the tools to look things up and to act "
    "for the user; never invent an account number, an amount or a date the user did not give.",
    "You are an operations agent. Prefer one tool call per step, check the result before the next step, "
    "and ask the user when a required detail is missing. Answer in the user's language.",
    "You help customers with their orders, flights, payments and profiles. Be brief. Amounts are in the "
    "account's currency unless the user says otherwise. Confirm before moving money.",
]
ASKS = ["What's the weather like where I'm going, and can you book it?", "Please send the usual transfer.",
        "Check my last orders and tell me the stock price too.", "Update my phone number, then email me.",
        "Can you do the same as last week?", "Book the flight we talked about and tell me the time there."]
RESULTS = [{"status": "ok"}, {"status": "ok", "id": None}, {"ok": True, "count": None},
           {"error": "rate_limited", "retry_after": None}, {"temperature": None, "unit": "celsius",
                                                           "conditions": "partly cloudy"}]


def tool_result(extra):
    """What a tool sends back, as the JSON text an application puts in a
    result (30 to 300 bytes)."""
    body = dict(extra.choice(RESULTS))
    for key in body:
        if body[key] is None:
            body[key] = extra.randint(0, 5000)
    if extra.random() < 0.5:
        body["items"] = [{"id": "%012x" % extra.getrandbits(48), "score": round(extra.random(), 3)}
                         for _ in range(extra.randint(1, 4))]
    return compact(body)


def history(extra):
    """The turns before the calls: one to three of the user's questions and
    the assistant's answers in text."""
    turns = []
    for _ in range(extra.randint(0, 2)):
        turns.append(("user", extra.choice(ASKS)))
        turns.append(("assistant", " ".join(extra.choice(OPENERS) for _ in range(extra.randint(1, 4)))))
    turns.append(("user", extra.choice(ASKS)))
    return turns


def chat_request(i, v, calls, extra, tools):
    """The same calls in an OpenAI Chat Completions request, as a line: the
    conversation an application sends back to the model after running
    them (a system prompt, the turns before, the assistant's message with
    the calls, one `tool` message a call holding its result as JSON text,
    in order) and the request's 12 tools declared with their schemas. The
    random draws of `chat_completion` come first, so payload i holds the
    same calls in both formats; what only this format has comes from
    `extra`."""
    v.r.randint(300, 4000), v.r.randint(15, 60)  # the usage of chat_completion
    v.alnum(29)
    model = v.pick(["gpt-4o-2024-08-06", "gpt-4.1-mini-2025-04-14", "gpt-4o-mini-2024-07-18"])
    v.alnum(10, "0123456789abcdef")
    messages = [{"role": "system", "content": extra.choice(SYSTEM_PROMPTS)}]
    messages += [{"role": role, "content": text} for role, text in history(extra)]
    messages.append({"role": "assistant", "content": None,
                     "tool_calls": [{"id": "call_" + cid, "type": "function",
                                     "function": {"name": name, "arguments": text}}
                                    for cid, name, text in calls]})
    messages += [{"role": "tool", "tool_call_id": "call_" + cid, "content": tool_result(extra)}
                 for cid, _, _ in calls]
    body = {
        "model": model,
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": n, "description": d, "parameters": p}}
                  for n, d, p in tools],
        "tool_choice": "auto",
        "temperature": extra.choice([0, 0.2, 0.7, 1]),
        "parallel_tool_calls": True,
    }
    return compact(body)


def messages_request(i, v, calls, extra, tools):
    """The same calls in an Anthropic Messages request, as a line: the
    conversation sent back after running them (a `system` prompt, the
    turns before, the assistant's turn with a `tool_use` block a call, its
    `input` the object as written, then the user's turn with one
    `tool_result` block a call) and the 12 tools declared with their
    `input_schema`. The random draws of `chat_completion` come first, so
    payload i holds the same calls in both formats."""
    v.r.randint(300, 4000), v.r.randint(15, 60)
    v.alnum(29)
    model = v.pick(CLAUDE_MODELS)
    v.alnum(10, "0123456789abcdef")
    messages = [{"role": role, "content": text} for role, text in history(extra)]
    content, inputs = tool_use_blocks(calls, extra)
    messages.append({"role": "assistant", "content": content})
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01" + cid[:22], "content": tool_result(extra)}
        for cid, _, _ in calls]})
    body = {
        "model": model,
        "max_tokens": extra.choice([1024, 4096, 8192]),
        "system": extra.choice(SYSTEM_PROMPTS),
        "messages": messages,
        "tools": [{"name": n, "description": d, "input_schema": p} for n, d, p in tools],
    }
    return with_inputs(compact(body), inputs)


def response(i, v, calls, extra, tools):
    """The same calls as one OpenAI Responses API response, as a line: a
    `reasoning` item (one time in two), then one `function_call` item a
    call, its `arguments` the text; the request's tools echoed in `tools`,
    with their schemas, as the API echoes them. The random draws are those
    of `chat_completion`, so payload i holds the same calls in both
    formats; what only this format has comes from `extra`."""
    prompt = v.r.randint(300, 4000)
    completion = v.r.randint(15, 60) * len(calls)
    resp_id = v.alnum(29)
    model = v.pick(["gpt-4o-2024-08-06", "gpt-4.1-mini-2025-04-14", "gpt-4o-mini-2024-07-18"])
    v.alnum(10, "0123456789abcdef")  # the system fingerprint Chat Completions sends
    hex_id = lambda: "%048x" % extra.getrandbits(192)
    output = []
    if extra.random() < 0.5:
        output.append({"id": "rs_" + hex_id(), "type": "reasoning", "summary": []})
    for cid, name, text in calls:
        output.append({"id": "fc_" + hex_id(), "type": "function_call", "status": "completed",
                       "arguments": text, "call_id": "call_" + cid, "name": name})
    body = {
        "id": "resp_" + resp_id,
        "object": "response",
        "created_at": 1767225600 + i * 37,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [{"type": "function", "description": d, "name": n, "parameters": p, "strict": False}
                  for n, d, p in tools],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": prompt + completion},
        "user": None,
        "metadata": {},
    }
    return compact(body)


def sse(events):
    """An event stream's body as a line: each event `(name, data)` (no
    name: a `data` line alone), JSON-encoded as a string."""
    body = "".join((f"event: {name}\n" if name else "") + f"data: {data}\n\n" for name, data in events)
    return compact(body)


def pieces(text, extra, sizes):
    """`text` cut into pieces whose lengths are drawn from `sizes`."""
    out = []
    while text:
        n = extra.choice(sizes)
        out.append(text[:n])
        text = text[n:]
    return out


def chat_sse(i, v, calls, extra):
    """The same calls as one streamed Chat Completions answer, as a line:
    the `text/event-stream` body, JSON-encoded as a string. One chunk
    gives the role, one opens each call (its id, type, name and empty
    arguments), then its arguments come in fragments of one to eight
    characters, as a model's tokens do, one fragment a chunk; then the
    finish reason, the usage chunk (`stream_options.include_usage`) and
    `[DONE]`. The random draws are those of `chat_completion`, so payload
    i holds the same calls in both; the fragments' lengths come from
    `extra`."""
    whole = json.loads(chat_completion(i, v, calls))
    head = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"],
            "model": whole["model"], "service_tier": "default",
            "system_fingerprint": whole["system_fingerprint"]}

    def chunk(delta, finish=None):
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": None, "refusal": None})]
    for k, call in enumerate(whole["choices"][0]["message"]["tool_calls"]):
        function = call["function"]
        chunks.append(chunk({"tool_calls": [{"index": k, "id": call["id"], "type": "function",
                                             "function": {"name": function["name"],
                                                          "arguments": ""}}]}))
        for piece in pieces(function["arguments"], extra, [1, 2, 3, 3, 4, 4, 4, 5, 5, 6, 7, 8]):
            chunks.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, "tool_calls"))
    chunks.append({**head, "choices": [], "usage": whole["usage"]})
    return sse([(None, compact(c)) for c in chunks] + [(None, "[DONE]")])


def messages_sse(i, v, calls, extra):
    """The same calls as one streamed Anthropic Messages answer, as a line
    (see `sse`): `message_start`, a `text` block streamed in words (four
    times in five), one `tool_use` block a call whose arguments text comes
    in `input_json_delta` fragments of 2 to 24 characters (none for
    empty arguments), `message_delta`, `message_stop`; a `ping` after the
    start. The random draws are those of `message`, so payload i holds the
    same calls; the fragments' lengths come from `extra`."""
    whole = json.loads(message(i, v, calls, extra))
    usage = whole["usage"]
    start = {"id": whole["id"], "type": "message", "role": "assistant", "model": whole["model"],
             "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}
    events = [("message_start", {"type": "message_start", "message": start}),
              ("ping", {"type": "ping"})]
    index = 0
    blocks = [b for b in whole["content"] if b["type"] == "text"]
    for block in blocks:
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}))
        for piece in pieces(block["text"], extra, [3, 5, 8, 12]):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for cid, name, text in calls:
        events.append(("content_block_start", {
            "type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": "toolu_01" + cid[:22], "name": name, "input": {}}}))
        fragments = pieces(text, extra, list(range(2, 25)))
        for piece in [""] + fragments if fragments else []:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                                     "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return sse([(name, compact(data)) for name, data in events])


def responses_sse(i, v, calls, extra, tools):
    """The same calls as one streamed OpenAI Responses answer, as a line
    (see `sse`): `response.created` and `.in_progress` (the response so
    far, the request's tools echoed), then each output item added, a
    call's arguments in `.function_call_arguments.delta` events of 1 to 8
    characters, `.done`, the item done; then `response.completed` with the
    whole response. The random draws are those of `response`, so payload
    i holds the same calls; the fragments' lengths come from `extra`."""
    whole = json.loads(response(i, v, calls, extra, tools))
    events = []

    def event(kind, **fields):
        events.append((kind, compact({"type": kind, **fields, "sequence_number": len(events)})))

    begun = {**whole, "status": "in_progress", "output": [], "usage": None}
    event("response.created", response=begun)
    event("response.in_progress", response=begun)
    for k, item in enumerate(whole["output"]):
        if item["type"] != "function_call":
            event("response.output_item.added", output_index=k, item=item)
            event("response.output_item.done", output_index=k, item=item)
            continue
        event("response.output_item.added", output_index=k,
              item={**item, "status": "in_progress", "arguments": ""})
        for piece in pieces(item["arguments"], extra, [1, 2, 3, 3, 4, 4, 4, 5, 5, 6, 7, 8]):
            event("response.function_call_arguments.delta", item_id=item["id"], output_index=k,
                  delta=piece, obfuscation="".join(extra.choice("abcdefghijklmnop") for _ in range(4)))
        event("response.function_call_arguments.done", item_id=item["id"], output_index=k,
              arguments=item["arguments"])
        event("response.output_item.done", output_index=k, item=item)
    event("response.completed", response=whole)
    return sse(events)


def gemini(i, v, calls, extra, reasoning=False):
    """The same calls as one Gemini `generateContent` answer, as a line: a
    `text` part (four times in five), then one `functionCall` part a call
    whose `args` is the arguments object as written (a string when the
    text is no JSON object, as for `message`). The random draws are those
    of `message`. With `reasoning`, a thought part comes first and the
    first call's part carries its `thoughtSignature`, as Gemini 2.5 sends
    them."""
    return _object_calls(i, v, calls, extra, "gemini", reasoning)


def bedrock(i, v, calls, extra, reasoning=False):
    """The same calls as one Bedrock Converse answer, as a line: a `text`
    block (four times in five), then one `toolUse` block a call whose
    `input` is the arguments object as written (a string when the text is
    no JSON object). The random draws are those of `message`. With
    `reasoning`, a `reasoningContent` block comes first."""
    return _object_calls(i, v, calls, extra, "bedrock", reasoning)


def _object_calls(i, v, calls, extra, wire, reasoning=False):
    """`gemini` or `bedrock`: the calls' arguments sent as objects."""
    prompt = v.r.randint(300, 4000)
    completion = v.r.randint(15, 60) * len(calls)
    resp_id = v.alnum(29)
    v.pick(CLAUDE_MODELS)  # the same draw as the OpenAI model
    v.alnum(10, "0123456789abcdef")  # the system fingerprint OpenAI sends
    opener = extra.choice(OPENERS) if extra.random() < 0.8 else None
    inputs = [input_text(text) for _, _, text in calls]
    if wire == "gemini":
        parts = ([{"text": opener}] if opener else []) + [
            {"functionCall": {"name": name, "args": f"\x00input{k}\x00"}}
            for k, (_, name, _) in enumerate(calls)]
        if reasoning:
            thought, signature = thinking(i)
            first = next(part for part in parts if "functionCall" in part)
            first["thoughtSignature"] = signature
            parts.insert(0, {"text": thought, "thought": True})
        body = {
            "candidates": [{"content": {"parts": parts, "role": "model"},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": completion,
                              "totalTokenCount": prompt + completion},
            "modelVersion": "gemini-2.5-flash",
            "responseId": resp_id[:22],
        }
    else:
        content = ([{"text": opener}] if opener else []) + [
            {"toolUse": {"toolUseId": "tooluse_" + cid[:22], "name": name, "input": f"\x00input{k}\x00"}}
            for k, (cid, name, _) in enumerate(calls)]
        if reasoning:
            thought, signature = thinking(i)
            content.insert(0, {"reasoningContent": {"reasoningText": {"text": thought, "signature": signature}}})
        body = {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": prompt, "outputTokens": completion,
                      "totalTokens": prompt + completion},
            "metrics": {"latencyMs": extra.randint(400, 4000)},
        }
    return with_inputs(compact(body), inputs)


def gemini_sse(i, v, calls, extra):
    """The same calls as one streamed Gemini answer
    (`streamGenerateContent?alt=sse`), as a line (see `sse`): the `text`
    part (four times in five) in pieces of 3 to 12 characters, one event
    a piece, then one event holding every `functionCall` part whole (as
    Gemini streams calls), then the last event (an empty text part, the
    finish reason, the whole usage). Every event carries the usage so far,
    the model version and the response id, as Gemini's do. The random
    draws are those of `gemini`, so payload i holds the same calls."""
    prompt = v.r.randint(300, 4000)
    completion = v.r.randint(15, 60) * len(calls)
    resp_id = v.alnum(29)[:22]
    v.pick(CLAUDE_MODELS)  # the draws of `_object_calls`
    v.alnum(10, "0123456789abcdef")
    opener = extra.choice(OPENERS) if extra.random() < 0.8 else None
    inputs = [input_text(text) for _, _, text in calls]

    def event(parts, usage, finish=None):
        candidate = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "usageMetadata": usage,
                "modelVersion": "gemini-2.5-flash", "responseId": resp_id}

    so_far = {"promptTokenCount": prompt, "totalTokenCount": prompt}
    events = [event([{"text": piece}], so_far) for piece in pieces(opener or "", extra, [3, 5, 8, 12])]
    parts = [{"functionCall": {"name": name, "args": f"\x00input{k}\x00"}}
             for k, (_, name, _) in enumerate(calls)]
    events.append(event(parts, so_far))
    events.append(event([{"text": ""}], {"promptTokenCount": prompt, "candidatesTokenCount": completion,
                                         "totalTokenCount": prompt + completion}, "STOP"))
    data = []
    for body in events:
        data.append((None, with_inputs(compact(body), inputs)))
    return sse(data)


def bedrock_stream(i, v, calls, extra):
    """The same calls as one Bedrock ConverseStream answer, as a line: the
    stream's events as JSON lines (the AWS SDKs' shape, one object an
    event keyed by its type), JSON-encoded as a string: `messageStart`,
    the `text` block (four times in five) in deltas of 3 to 12 characters,
    then a `toolUse` block a call, its input text in `toolUse.input`
    deltas of 2 to 24 characters, `messageStop` and `metadata` (usage and
    latency). Bedrock pads each event with a `p` string of random length.
    The random draws are those of `bedrock`, so payload i holds the same
    calls."""
    prompt = v.r.randint(300, 4000)
    completion = v.r.randint(15, 60) * len(calls)
    v.alnum(29)
    v.pick(CLAUDE_MODELS)  # the draws of `_object_calls`
    v.alnum(10, "0123456789abcdef")
    opener = extra.choice(OPENERS) if extra.random() < 0.8 else None
    alphabet = string.ascii_letters + "0123456789"

    def pad():
        return alphabet[:extra.randint(1, 60)]

    events = [{"messageStart": {"p": pad(), "role": "assistant"}}]
    index = 0
    if opener:
        for piece in pieces(opener, extra, [3, 5, 8, 12]):
            events.append({"contentBlockDelta": {"contentBlockIndex": index, "delta": {"text": piece},
                                                 "p": pad()}})
        events.append({"contentBlockStop": {"contentBlockIndex": index, "p": pad()}})
        index += 1
    for cid, name, text in calls:
        events.append({"contentBlockStart": {"contentBlockIndex": index, "p": pad(), "start": {
            "toolUse": {"name": name, "toolUseId": "tooluse_" + cid[:22]}}}})
        for piece in pieces(text, extra, list(range(2, 25))):
            events.append({"contentBlockDelta": {"contentBlockIndex": index,
                                                 "delta": {"toolUse": {"input": piece}}, "p": pad()}})
        events.append({"contentBlockStop": {"contentBlockIndex": index, "p": pad()}})
        index += 1
    events.append({"messageStop": {"p": pad(), "stopReason": "tool_use"}})
    events.append({"metadata": {"metrics": {"latencyMs": extra.randint(400, 4000)}, "p": pad(),
                                "usage": {"inputTokens": prompt, "outputTokens": completion,
                                          "totalTokens": prompt + completion}}})
    return compact("".join(compact(event) + "\n" for event in events))


def vercel_sse(i, v, calls, extra, tools):
    """The same calls as one Vercel AI SDK v5 UI message stream, as
    `streamText(...).toUIMessageStreamResponse()` sends it, as a line (see
    `sse`): `start` (one time in two with a `messageId`), `start-step`, the
    text part (four times in five) in `text-delta`s of 3 to 12 characters,
    then for each call `tool-input-start`, its arguments text in
    `tool-input-delta`s of 1 to 8 characters, and the call as the SDK
    parsed it; `finish-step`, `finish`, `[DONE]`. The tools are declared
    with `jsonSchema()`, which validates nothing, so the SDK only parses
    the text: `tool-input-available` whose `input` is what `JSON.parse`
    gives (a key sent twice: its last value; empty text: `{}`), or
    `tool-input-error` (`errorText`, and `input` the raw text when it does
    not parse, else the parsed value) for a text that does not parse or a
    tool the SDK does not know. The random draws are those of
    `chat_completion`, so payload i holds the same calls; the rest comes
    from `extra`."""
    v.r.randint(300, 4000)  # the draws of `chat_completion`: usage, id,
    v.r.randint(15, 60)  # model and system fingerprint
    v.alnum(29)
    v.pick(CLAUDE_MODELS)
    v.alnum(10, "0123456789abcdef")
    start = {"type": "start"}
    if extra.random() < 0.5:
        start["messageId"] = "msg-" + "".join(extra.choice(string.ascii_letters + string.digits)
                                              for _ in range(16))
    events = [start, {"type": "start-step"}]
    opener = extra.choice(OPENERS) if extra.random() < 0.8 else None
    if opener:
        events.append({"type": "text-start", "id": "0"})
        for piece in pieces(opener, extra, [3, 5, 8, 12]):
            events.append({"type": "text-delta", "id": "0", "delta": piece})
        events.append({"type": "text-end", "id": "0"})
    known = [name for name, _, _ in tools]
    for cid, name, text in calls:
        call_id = "call_" + cid
        events.append({"type": "tool-input-start", "toolCallId": call_id, "toolName": name})
        for piece in pieces(text, extra, [1, 2, 3, 3, 4, 4, 4, 5, 5, 6, 7, 8]):
            events.append({"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": piece})
        try:
            parsed, failure = js_parse(text) if text.strip() else {}, None
        except ValueError as err:
            parsed, failure = text, js_parse_error(text, err)
        if name not in known:  # NoSuchToolError, checked first
            events.append({"type": "tool-input-error", "toolCallId": call_id, "toolName": name,
                           "input": parsed, "dynamic": True,
                           "errorText": f"Model tried to call unavailable tool '{name}'. "
                                        f"Available tools: {', '.join(known)}."})
        elif failure:  # InvalidToolInputError
            events.append({"type": "tool-input-error", "toolCallId": call_id, "toolName": name,
                           "input": parsed,
                           "errorText": f"Invalid input for tool {name}: JSON parsing failed: "
                                        f"Text: {text}.\nError message: {failure}"})
        else:
            events.append({"type": "tool-input-available", "toolCallId": call_id, "toolName": name,
                           "input": parsed})
    events += [{"type": "finish-step"}, {"type": "finish"}]
    return sse([(None, compact(event)) for event in events] + [(None, "[DONE]")])


def js_parse(text):
    """`text` as JavaScript's `JSON.parse` reads it: a key twice gives its
    last value, in the first one's place; `NaN` and `Infinity` are no JSON;
    every number is a double, which `JSON.stringify` writes back without a
    fraction when it has none (`3177.0` as `3177`)."""

    def no_constant(name):
        raise ValueError(f"{name} is no JSON")

    def number(literal):
        value = float(literal)
        return int(value) if value.is_integer() and abs(value) < 1e21 else value

    return json.loads(text, parse_constant=no_constant, parse_float=number, parse_int=number)


def js_parse_error(text, err):
    """Roughly V8's message for `JSON.parse(text)` failing as `err` says."""
    at = getattr(err, "pos", len(text))
    if "Unterminated string" in str(err):
        return f"Unterminated string in JSON at position {len(text)} (line 1 column {len(text) + 1})"
    if at >= len(text):
        return "Unexpected end of JSON input"
    return f"Expected property name or '}}' in JSON at position {at} (line 1 column {at + 1})"


def input_text(text):
    """An arguments text as an Anthropic `input`: the object as written, or
    the text as a string when it is not a JSON object."""
    if text == "":
        return "{}"
    try:
        parsed = json.loads(text, object_pairs_hook=list)
    except ValueError:
        return compact(text)
    return text if isinstance(parsed, list) and text.startswith("{") else compact(text)


# --- shapes --------------------------------------------------------------------

# Every kind of defect a shape can hold, and the violation code toolgate
# must report for it.
CODES = {
    "unknown_tool": "not_allowed",
    "missing_required": "schema_violation",
    "wrong_type": "schema_violation",
    "enum_miss": "schema_violation",
    "bad_format": "schema_violation",
    "pattern_miss": "schema_violation",
    "extra_property": "schema_violation",
    "malformed_arguments": "malformed_arguments",
    "duplicate_key": "duplicate_argument_key",
    "arguments_to_no_arg_tool": "unexpected_arguments",
    # deep
    "deep_missing_required": "schema_violation",
    "deep_pattern_miss": "schema_violation",
    "one_of_none": "schema_violation",
    "one_of_two": "schema_violation",
    "unevaluated_property": "schema_violation",
    # formats
    "bad_email": "schema_violation",
    "bad_date_time": "schema_violation",
    "bad_date": "schema_violation",
    "bad_uri": "schema_violation",
    "bad_uuid": "schema_violation",
    "bad_ipv4": "schema_violation",
    # numbers
    "out_of_range": "schema_violation",
    "not_multiple": "schema_violation",
    "duplicate_item": "schema_violation",
    "wrong_item_count": "schema_violation",
}


def codes(*kinds):
    """The kinds a shape holds, in the order its defects are drawn from,
    with their codes."""
    return {kind: CODES[kind] for kind in kinds}


class Shape:
    """A workload shape: its tools, how payloads pick them, valid arguments,
    its defects and its wire format. Subclasses set the class attributes
    and `arguments`; `tables` maps a defect kind to, per tool, the ways to
    make one call defective: (key, bad value) pairs, or functions of
    (arguments, values) that change the arguments and return the JSON
    Pointer toolgate reports."""

    name = ""
    wire = "openai"  # or "anthropic", "responses", "gemini", "bedrock", "chat_sse", "messages_sse", "responses_sse",
    # "gemini_sse", "bedrock_stream", "vercel_sse"
    tools = []  # (name, description, parameters)
    tool_weights = None
    call_counts, call_weights = [1], [1]
    kinds = {}  # kind -> violation code
    tables = {}
    no_args = None
    unknown_names = []
    # Whether the arguments hold free text that `--text` writes otherwise.
    free_text = False
    # Whether a reasoning model's thought comes before the calls (the
    # `openai`, `anthropic`, `gemini` and `bedrock` wires).
    reasoning = False

    # What a subclass may change.

    def arguments(self, tool, v):
        raise NotImplementedError

    def no_arg_extras(self, v):
        return {"format": "iso8601"}

    def pick_tools(self, v):
        n = v.r.choices(self.call_counts, weights=self.call_weights)[0]
        # Popular tools come up more often, as in real traffic.
        return v.r.choices([name for name, _, _ in self.tools], weights=self.tool_weights, k=n)

    def text(self, args, v):
        """The arguments text a model sends."""
        return ascii_compact(args) if v.text == "escaped" else compact(args)

    def clean_call(self, v, tool):
        if tool == self.no_args:
            return v.pick(["{}", "{}", ""])
        return self.text(self.arguments(tool, v), v)

    def with_args(self):
        return [name for name, _, _ in self.tools if name != self.no_args]

    def required(self, tool):
        return next(s for n, _, s in self.tools if n == tool)["required"]

    def duplicated(self, args, v):
        """The key a duplicate_key defect sends twice."""
        return v.pick(list(args))

    def malformed(self, args, v):
        """Arguments text that is not JSON."""
        text = self.text(args, v)
        if v.maybe():  # cut short, as when the model hits max_tokens
            return text[: v.r.randint(1, len(text) - 1)]
        return repr(args)  # a Python dict instead of JSON

    def defective_call(self, kind, v):
        """(tool, arguments text, name sent, JSON Pointer of the defect)."""
        if kind == "arguments_to_no_arg_tool":
            args = self.no_arg_extras(v)
            return self.no_args, compact(args), self.no_args, "/" + next(iter(args))
        if kind in self.tables:
            table = self.tables[kind]
            tool = v.pick(sorted(table))
            change = v.pick(table[tool])
            args = self.arguments(tool, v)
            if callable(change):
                path = change(args, v)
            else:
                key, bad = change
                args[key] = bad
                # An extra property is reported at the property itself.
                path = "/" + key
            return tool, self.text(args, v), tool, path
        tool = v.pick(self.with_args())
        args = self.arguments(tool, v)
        if kind == "unknown_tool":
            return tool, self.text(args, v), v.pick(self.unknown_names), None
        if kind == "missing_required":
            key = v.pick(self.required(tool))
            del args[key]
            return tool, self.text(args, v), tool, "/" + key
        if kind == "malformed_arguments":
            return tool, self.malformed(args, v), tool, None
        if kind == "duplicate_key":  # a key sent twice, each value valid alone
            text = self.text(args, v)
            key = self.duplicated(args, v)
            again = self.arguments(tool, v).get(key, args[key])
            # Written as Shape.text writes arguments (not a subclass's way).
            text = text[:-1] + "," + Shape.text(self, {key: again}, v)[1:]
            return tool, text, tool, None  # the message names the key; no pointer
        raise ValueError(kind)

    # The generator.

    def body_bytes(self, line):
        """The bytes of the payload a line holds."""
        if self.wire.endswith(("_sse", "_stream")):
            return len(json.loads(line).encode())
        return len(line.encode())

    def payload(self, i, v, defect, extra):
        """One response as a line, its number of calls, and its defect record."""
        tools = self.pick_tools(v)
        calls, record = [], None
        bad_at = v.r.randrange(len(tools)) if defect else -1
        for index, tool in enumerate(tools):
            if index == bad_at:
                tool, text, name, path = self.defective_call(defect, v)
                record = {"kind": defect, "code": self.kinds[defect], "call": index, "tool": name,
                          "path": path}
            else:
                text, name = self.clean_call(v, tool), tool
            calls.append((v.alnum(24), name, text))
        if self.wire == "anthropic":
            return message(i, v, calls, extra, self.reasoning), len(calls), record
        if self.wire == "responses":
            return response(i, v, calls, extra, self.tools), len(calls), record
        if self.wire == "gemini":
            return gemini(i, v, calls, extra, self.reasoning), len(calls), record
        if self.wire == "bedrock":
            return bedrock(i, v, calls, extra, self.reasoning), len(calls), record
        if self.wire == "chat_sse":
            return chat_sse(i, v, calls, extra), len(calls), record
        if self.wire == "messages_sse":
            return messages_sse(i, v, calls, extra), len(calls), record
        if self.wire == "bedrock_stream":
            return bedrock_stream(i, v, calls, extra), len(calls), record
        if self.wire == "gemini_sse":
            return gemini_sse(i, v, calls, extra), len(calls), record
        if self.wire == "responses_sse":
            return responses_sse(i, v, calls, extra, self.tools), len(calls), record
        if self.wire == "vercel_sse":
            return vercel_sse(i, v, calls, extra, self.tools), len(calls), record
        if self.wire == "chat_request":
            return chat_request(i, v, calls, extra, self.tools), len(calls), record
        if self.wire == "messages_request":
            return messages_request(i, v, calls, extra, self.tools), len(calls), record
        return chat_completion(i, v, calls, self.reasoning), len(calls), record

    def policy_yaml(self):
        if self.wire in ("anthropic", "messages_request"):
            tools = [{"name": n, "description": d, "input_schema": p} for n, d, p in self.tools]
            shape = "Anthropic `tools` entries"
        else:
            tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": p}}
                     for n, d, p in self.tools]
            shape = "OpenAI `tools` entries"
        if self.name == "openai":
            head = "# The tools of the check workload (bench/workload.py): OpenAI `tools` entries.\n"
        else:
            head = f"# The tools of the `{self.name}` check workload (bench/workload.py): {shape}.\n"
        return head + "validate_formats: true\ntools:\n" + yaml(tools, 2) + "\n"


def refused(shape, layout, text):
    """Why `shape` is not written in `layout` with its free text as
    `text`, or None when it can be."""
    if layout != "compact" and shape.wire.endswith(("_sse", "_stream")):
        return f"{shape.name}: a stream's events are laid out as the stream sends them"
    if text != "plain" and not shape.free_text:
        return f"{shape.name}: its arguments hold no free text to write otherwise"
    if text != "plain" and layout != "compact":
        return "another text and another layout: one at a time"
    return None


def split_name(name, shapes):
    """A workload's name as the check bench knows it (`gemini`,
    `gemini-indent`, `openai-escaped`) as its shape, layout and text;
    None when it names no shape of `shapes`."""
    base, _, last = name.rpartition("-")
    if base in shapes and last in LAYOUTS[1:]:
        return base, last, "plain"
    if base in shapes and last in TEXTS[1:]:
        return base, "compact", last
    return (name, "compact", "plain") if name in shapes else None


def generate(shape, out_dir, count, seed, layout="compact", text="plain"):
    """Write the workload of `shape` into `out_dir`, its bodies laid out
    as `layout` (whole bodies only; an indented body, which spans lines,
    is written as a JSON string, as the check bench reads it) and its
    free text written as `text` (TEXTS; not with another layout);
    stats.json last."""
    problem = refused(shape, layout, text)
    if problem:
        raise ValueError(problem)
    rng = random.Random(seed)
    extra = random.Random(seed + 1)
    v = Values(rng, text)
    kinds = list(shape.kinds)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "policy.yaml"), "w", encoding="utf-8") as f:
        f.write(shape.policy_yaml())
    n_calls = n_bytes = 0
    per_kind = {k: 0 for k in kinds}
    with open(os.path.join(out_dir, "payloads.jsonl"), "w", encoding="utf-8") as out, \
            open(os.path.join(out_dir, "defects.jsonl"), "w", encoding="utf-8") as bad:
        for i in range(count):
            defect = kinds[rng.randrange(len(kinds))] if rng.random() < 0.2 else None
            line, calls, record = shape.payload(i, v, defect, extra)
            if layout != "compact":
                body = lay_out(line, layout)
                line = json.dumps(body, ensure_ascii=False) if layout == "indent" else body
            out.write(line + "\n")
            bad.write(compact({"payload": i, **(record or {"kind": "clean", "code": None})}) + "\n")
            n_calls += calls
            n_bytes += len(body.encode()) if layout != "compact" else shape.body_bytes(line)
            if defect:
                per_kind[defect] += 1
    defective = sum(per_kind.values())
    stats = {"payloads": count, "calls": n_calls, "bytes": n_bytes, "defective": defective,
             "per_kind": per_kind, "seed": seed}
    if shape.name != "openai" or layout != "compact":  # the first shape's stats are as they were
        stats["shape"] = shape.name
    if layout != "compact":
        stats["layout"] = layout
    if text != "plain":
        stats["text"] = text
    with open(os.path.join(out_dir, "stats.json"), "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=1)
    n = max(count, 1)
    print(f"{count} {shape.name} payloads ({layout}, {text} text) in {out_dir}: {n_bytes / n:.0f} bytes and "
          f"{n_calls / n:.2f} calls on average; {defective} defective ({defective / n:.1%})",
          file=sys.stderr)
    for kind, number in per_kind.items():
        print(f"  {kind:26} {number:5}  -> {shape.kinds[kind]}", file=sys.stderr)
