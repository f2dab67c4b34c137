"""Shared helpers: the repository's paths and the built `toolgate` binary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
EXAMPLES = REPO / "examples"


def toolgate_binary() -> str:
    """The CLI these tests compare with: $TOOLGATE, else the debug build."""
    explicit = os.environ.get("TOOLGATE")
    if explicit:
        return explicit
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for build in ("debug", "release"):
        candidate = target / build / "toolgate"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("toolgate")
    if found:
        return found
    pytest.fail("build the CLI first (cargo build -p toolgate-cli) or set TOOLGATE")


def cli_json(*args: str | os.PathLike[str]) -> dict[str, Any]:
    """Run `toolgate ARGS... --compact` and parse the verdict it prints."""
    done = subprocess.run(
        [toolgate_binary(), *map(str, args)],
        capture_output=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr.decode()
    return json.loads(done.stdout)


def payload_files() -> list[Path]:
    """Every payload fixture: each wire format, streams included."""
    return sorted(
        p
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.suffix in (".json", ".sse", ".jsonl")
    )
