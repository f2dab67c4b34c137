"""`tools/call` latency: the same MCP server direct and through toolgate,
requests alternated one by one so both see the same load. Each request is
a stateless 2026-07-28 `tools/call` (its own POST, JSON answer) over a
kept-alive connection. Prints one JSON line with p50/p99 of each and the
latency toolgate adds at each.

    python mcp_bench.py DIRECT_URL GATEWAY_URL [REQUESTS]
"""

import http.client
import json
import statistics
import sys
import time
import urllib.parse

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "get_weather",
}


class Target:
    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.path = parts.path
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        self.times: list[float] = []

    def call(self, n: int, keep: bool) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                           "params": {"name": "get_weather", "arguments": {"city": "Paris"}, "_meta": META}})
        began = time.perf_counter()
        self.conn.request("POST", self.path, body=body, headers=HEADERS)
        answer = self.conn.getresponse()
        data = answer.read()
        took = time.perf_counter() - began
        if answer.status != 200 or b"Sunny in Paris" not in data:
            raise SystemExit(f"unexpected answer {answer.status}: {data[:300]!r}")
        if keep:
            self.times.append(took)


def pct(times: list[float], p: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def main() -> None:
    direct, gateway = Target(sys.argv[1]), Target(sys.argv[2])
    requests = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    warmup = 100
    for n in range(warmup + requests):
        first, second = (direct, gateway) if n % 2 == 0 else (gateway, direct)
        first.call(n, n >= warmup)
        second.call(n, n >= warmup)
    out = {
        "requests": requests,
        "direct_p50_ms": round(pct(direct.times, 0.50), 3),
        "direct_p99_ms": round(pct(direct.times, 0.99), 3),
        "gateway_p50_ms": round(pct(gateway.times, 0.50), 3),
        "gateway_p99_ms": round(pct(gateway.times, 0.99), 3),
        "direct_mean_ms": round(statistics.mean(direct.times) * 1000, 3),
        "gateway_mean_ms": round(statistics.mean(gateway.times) * 1000, 3),
    }
    out["added_p50_ms"] = round(out["gateway_p50_ms"] - out["direct_p50_ms"], 3)
    out["added_p99_ms"] = round(out["gateway_p99_ms"] - out["direct_p99_ms"], 3)
    print(json.dumps(out))
    print("| | p50 ms | p99 ms |")
    print("|---|---|---|")
    print(f"| direct | {out['direct_p50_ms']} | {out['direct_p99_ms']} |")
    print(f"| through toolgate | {out['gateway_p50_ms']} | {out['gateway_p99_ms']} |")
    print(f"| added | {out['added_p50_ms']} | {out['added_p99_ms']} |")


if __name__ == "__main__":
    main()
