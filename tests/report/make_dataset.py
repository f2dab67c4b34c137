"""Write the datasets the report render check runs `toolgate eval` on.

`previous.jsonl` and `current.jsonl` are a support agent's traces before
and after a change, as rows with ids, names and metadata, beside plain
payloads: OpenAI and Anthropic responses, calls of a hallucinated tool
(every call invalid), forbidden calls, missing arguments, an order
mistake, and lines that hold no trace. Fixed seed: the same files each
time.

    python3 make_dataset.py OUT_DIR
"""

import json
import random
import sys
from pathlib import Path


def openai(calls):
    return {"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": f"call_{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)]}}]}


def anthropic(calls):
    return {"role": "assistant", "content": [
        {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
        for i, (name, args) in enumerate(calls)]}


def trace(rng, quality):
    """One trace: a good run most of the time, else one of the mistakes."""
    order = rng.randint(1000, 9999)
    good = [("lookup_order", {"order_id": f"o-{order}"}),
            ("send_email", {"to": "customer@example.com", "subject": "Your order"})]
    roll = rng.random()
    if roll < quality:
        calls = good
    elif roll < quality + 0.05:
        calls = [("lookup_order", {"order_id": f"o-{order}"}), ("refund_order", {"order_id": f"o-{order}"})]
    elif roll < quality + 0.09:
        calls = [("search_knowledge_base_v2", {"q": "refund policy"})] + good
    elif roll < quality + 0.13:
        calls = [("lookup_order", {}), good[1]]
    elif roll < quality + 0.16:
        calls = [good[1], good[0]]
    else:
        calls = [("lookup_order", {"order_id": f"o-{order}"}),
                 ("send_email", {"to": "not an address", "subject": "x"})]
    return (openai if rng.random() < 0.6 else anthropic)(calls)


def dataset(path, seed, quality, bad_lines):
    rng = random.Random(seed)
    flows = ["refund flow", "order status", "address change", "cancellation", "delivery delay"]
    with open(path, "w") as out:
        for n in range(1, 601):
            payload = trace(rng, quality)
            if n % 3 == 0:
                row = {"id": f"t-{n:04d}", "name": rng.choice(flows),
                       "metadata": {"model": "agent-v7", "seed": seed},
                       "input": "Where is my order?", "output": payload}
                if n % 45 == 0:
                    row["policy"] = {"expected": ["lookup_order", "send_email", "create_ticket"]}
                out.write(json.dumps(row) + "\n")
            else:
                out.write(json.dumps(payload) + "\n")
        for line in bad_lines:
            out.write(line + "\n")


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    dataset(out / "previous.jsonl", 7, 0.70, [])
    dataset(out / "current.jsonl", 11, 0.78, [
        "this line is not JSON",
        json.dumps({"id": "t-9001", "name": "typo in a per-line policy",
                    "output": openai([("lookup_order", {"order_id": "o-1"})]),
                    "policy": {"expectd": ["send_email"]}}),
        json.dumps({"name": "no trace here", "output": "The agent answered in text."}),
    ])


if __name__ == "__main__":
    main()
