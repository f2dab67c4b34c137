#!/usr/bin/env python3
"""A deterministic check workload of one shape: responses calling the
shape's tools (or requests sending their calls back), about a fifth of
them with exactly one defect.

usage: workload.py OUT_DIR [--shape SHAPE] [--count N] [--seed S] [--layout LAYOUT] [--text TEXT]
       workload.py OUT_DIR --name NAME [--count N] [--seed S]
         (NAME as the check bench names a workload: SHAPE, SHAPE-LAYOUT or
         SHAPE-TEXT: gemini-indent, openai-escaped)

Shapes (bench/shapes/):
  openai     OpenAI Chat Completions responses, 12 tools with nested
             objects, enums, formats and patterns, 1 to 5 calls (the
             default; its bytes are those this script always wrote)
  anthropic  the same calls as Anthropic Messages responses: `text` and
             `tool_use` blocks whose `input` is the arguments object
  responses  the same calls as OpenAI Responses API responses:
             `function_call` items after a `reasoning` one (half the
             time), the request's tools echoed with their schemas
  gemini     the same calls as Gemini `generateContent` answers:
             `functionCall` parts whose `args` is the arguments object
  bedrock    the same calls as Bedrock Converse answers: `toolUse`
             blocks whose `input` is the arguments object
  chat-sse   the same calls streamed as Chat Completions chunks, the
             arguments in fragments of 1 to 8 characters (payloads.jsonl
             holds each `text/event-stream` body as a JSON string)
  messages-sse  the same calls streamed as Anthropic Messages events,
             `input_json_delta` fragments of 2 to 24 characters
  responses-sse the same calls streamed as OpenAI Responses events,
             arguments deltas of 1 to 8 characters, the response's
             start and end echoing the tools
  gemini-sse the same calls streamed as Gemini `streamGenerateContent`
             events (`alt=sse`): the text in pieces, the calls whole in
             one event, each event carrying the usage so far
  bedrock-stream  the same calls streamed as Bedrock ConverseStream
             events, as JSON lines: `toolUse.input` fragments of 2 to 24
             characters
  vercel-sse the same calls streamed as a Vercel AI SDK v5 UI message
             stream (`toUIMessageStreamResponse()`): each call's arguments
             in `tool-input-delta`s of 1 to 8 characters, then its parsed
             `input` (`tool-input-available`), or `tool-input-error` for
             arguments that do not parse or an unknown tool
  small      10 calls a payload with tiny arguments
  large      1 to 3 calls of a coding agent, at least one with an 8-32 KB
             string dense with escapes (source code, diffs)
  large-anthropic  the calls of large as Anthropic Messages responses:
             each `tool_use` block's `input` the arguments object, its
             long string read once by every reader
  deep       schemas with `$defs`/`$ref`, `oneOf`, `allOf`, recursion and
             `unevaluatedProperties: false`, nested several levels
  formats    arguments dense with email, date-time, date, uri, uuid, ipv4
  numbers    arguments dense with numbers: arrays of integers and floats
             under bounds, `multipleOf`, `uniqueItems` and `prefixItems`,
             constants written with exponents
  openai-thinking, anthropic-thinking, gemini-thinking, bedrock-thinking
             the calls of openai, anthropic, gemini and bedrock from a
             reasoning model: its thought before the calls, as each API
             sends it (`reasoning_content` in the message; a `thinking`
             block and its signature; a thought part, and the first call's
             `thoughtSignature`; a `reasoningContent` block)
  openai-request  the calls of openai in the Chat Completions request
             an application sends back after running them: a system
             prompt, the turns before, the assistant's message with the
             calls, one `tool` message a call with its result as JSON
             text, and the 12 tools declared with their schemas (8.5 KB)
  anthropic-request  the same as an Anthropic Messages request: `system`,
             the turns before, the assistant's `tool_use` blocks, the
             user's `tool_result` blocks, the tools' `input_schema`s

Layouts (whole bodies; the same calls, defects and arguments strings):
  compact    no whitespace between tokens (the default)
  spaced     Python's default separators, `, ` and `: `
  indent     two spaces a level, a line a member, as the OpenAI (Chat
             Completions, Responses) and Gemini APIs serve their answers;
             each body is written as a JSON string (it spans lines)

Texts (the shapes above `small`, whose calls hold free text: cities,
subjects, bodies, titles, descriptions; the calls and defects drawn the
same way, until a defect cuts an arguments text of another length short):
  plain      as always (the default)
  unicode    that text in other scripts, as UTF-8: accented Latin,
             Cyrillic, Greek, Japanese, Chinese, Hangul, Arabic, emoji
  escaped    the same text, every character past ASCII written as a
             `\\uXXXX` escape in the arguments (as Python's `json.dumps`
             writes it by default)
A workload takes another text or another layout, not both.

Writes into OUT_DIR:
  policy.yaml     the shape's tools (OpenAI or Anthropic `tools` shape)
  payloads.jsonl  one response a line (in the indent layout, as a JSON string)
  defects.jsonl   one line per payload, same order: {"payload", "kind",
                  "code", "call", "tool", "path"}; kind "clean" and code
                  null for a payload that must pass, else the one violation
                  code toolgate must report, on call index "call", at the
                  JSON Pointer "path" (null: none expected)
  stats.json      payloads, calls, bytes, defective, per kind, seed (and
                  the shape, but for openai), written last
and prints the same statistics to stderr. Same shape and seed, same bytes."""
import argparse

from shapes import SHAPES
from shapes.common import LAYOUTS, TEXTS, generate, refused, split_name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--shape", choices=list(SHAPES), default="openai")
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=20260101)
    ap.add_argument("--layout", choices=LAYOUTS, default="compact")
    ap.add_argument("--text", choices=TEXTS, default="plain")
    ap.add_argument("--name", help="the shape, layout and text as the check bench names them "
                    "(gemini-indent, openai-escaped), for --shape, --layout and --text")
    opts = ap.parse_args()
    if opts.name:
        parts = split_name(opts.name, SHAPES)
        if parts is None:
            ap.error(f"--name {opts.name}: no shape, SHAPE-LAYOUT or SHAPE-TEXT")
        opts.shape, opts.layout, opts.text = parts
    shape = SHAPES[opts.shape]()
    problem = refused(shape, opts.layout, opts.text)
    if problem:
        ap.error(problem)
    generate(shape, opts.out_dir, opts.count, opts.seed, opts.layout, opts.text)


if __name__ == "__main__":
    main()
