"""`large`: a coding agent's OpenAI Chat Completions responses, 1 to 3
calls each, at least one of which writes a file, applies a patch or opens a
pull request with an 8-32 KB string: source code in five languages, dense
with what JSON must escape (quotes, backslashes, newlines, tabs, CRLF line
ends) and non-ASCII text, which two in five calls send
as \\u escapes (surrogate pairs for emoji), as some models do. Inside an
`arguments` string every escape is escaped again."""
import json

from .common import Shape, codes, compact, obj

PATH = {"type": "string", "pattern": "^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", "maxLength": 255}

TOOLS = [
    ("write_file", "Create or overwrite a file of the workspace with the given content.", obj({
        "path": PATH,
        "content": {"type": "string", "maxLength": 65536},
        "mode": {"type": "string", "enum": ["overwrite", "create", "append"]},
        "create_dirs": {"type": "boolean"},
    }, ["path", "content"], closed=True)),
    ("apply_patch", "Apply a unified diff to a file of the workspace.", obj({
        "path": PATH,
        "patch": {"type": "string", "minLength": 1, "maxLength": 65536},
        "dry_run": {"type": "boolean"},
    }, ["path", "patch"], closed=True)),
    ("create_pull_request", "Open a pull request from a branch.", obj({
        "title": {"type": "string", "minLength": 1, "maxLength": 256},
        "body": {"type": "string", "maxLength": 65536},
        "head": {"type": "string", "pattern": "^[a-z0-9._/-]+$"},
        "base": {"type": "string", "pattern": "^[a-z0-9._/-]+$"},
        "draft": {"type": "boolean"},
    }, ["title", "body", "head"], closed=True)),
    ("run_command", "Run a shell command in the workspace.", obj({
        "command": {"type": "string", "minLength": 1, "maxLength": 4000},
        "cwd": PATH,
        "shell": {"type": "string", "enum": ["bash", "sh", "pwsh"]},
        "timeout_s": {"type": "integer", "minimum": 1, "maximum": 3600},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
    }, ["command"], closed=True)),
    ("read_file", "Read lines of a file of the workspace.", obj({
        "path": PATH,
        "start_line": {"type": "integer", "minimum": 1},
        "end_line": {"type": "integer", "minimum": 1},
    }, ["path"], closed=True)),
    ("search_code", "Search the workspace with a regular expression.", obj({
        "query": {"type": "string", "minLength": 1},
        "glob": {"type": "string"},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 200},
    }, ["query"], closed=True)),
]
BIG = ["write_file", "apply_patch", "create_pull_request"]

# Source code, one template a snippet: @F@ a function name, @T@ a type
# name, @W@ a word, @N@ a number, @S@ a short text with non-ASCII.
SNIPPETS = [
    # Python
    '''def @F@(path: str, limit: int = @N@) -> dict[str, str]:
    """Read the @W@ records of "path" and return them by id."""
    pattern = re.compile(r"^(\\d{4})-(\\d{2})-(\\d{2})\\s+\\"(.*?)\\"$")
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if m := pattern.match(line.rstrip("\\n")):
                out[m.group(1)] = m.group(4).replace("\\\\t", "\\t")
    log.info("loaded %d rows from '%s': @S@", len(out), path)
    return out
''',
    '''class @T@(Exception):
    """Raised when the @W@ cannot be parsed; keeps the offending line."""

    def __init__(self, line: str, col: int = @N@) -> None:
        super().__init__(f"bad {line!r} at col {col}: expected '\\"' or '\\\\'")
        self.line, self.col = line, col
''',
    # Rust
    '''pub fn @F@(input: &str) -> Result<Vec<String>, @T@Error> {
\tlet re = Regex::new(r#"^"(?:[^"\\\\]|\\\\.)*"$"#)?;
\tlet mut out = Vec::with_capacity(@N@);
\tfor (i, line) in input.lines().enumerate() {
\t\tif !re.is_match(line) {
\t\t\treturn Err(@T@Error::Syntax { line: i + 1, text: format!("{line:?}") });
\t\t}
\t\tout.push(line.trim_matches('"').replace("\\\\n", "\\n"));
\t}
\tprintln!("{}: \\"@W@\\" -> {:?} (@S@)", out.len(), out.first());
\tOk(out)
}
''',
    # JavaScript
    '''export async function @F@(url, opts = {}) {
  const res = await fetch(`${url}?q=${encodeURIComponent(opts.q ?? "@W@")}`, {
    headers: { "Content-Type": "application/json", "X-Trace": "@N@" },
  });
  if (!res.ok) throw new Error(`request failed: ${res.status} "${res.statusText}"`);
  const text = await res.text();
  // Some servers send \\uXXXX escapes twice: undo the second layer.
  return JSON.parse(text.replace(/\\\\u([0-9a-f]{4})/gi, (_, h) => String.fromCharCode(parseInt(h, 16))));
}
''',
    # Go, indented with tabs
    '''func @T@Handler(w http.ResponseWriter, r *http.Request) {
\tname := r.URL.Query().Get("@W@")
\tif name == "" {
\t\thttp.Error(w, "missing \\"@W@\\" parameter", http.StatusBadRequest)
\t\treturn
\t}
\tfmt.Fprintf(w, "%s\\t%q\\n", "@S@", name)
\tlog.Printf("served %d bytes in %s", @N@, time.Since(start))
}
''',
    # a Windows batch file, with CRLF line ends
    '@echo off\r\nset "SRC=C:\\Program Files\\@T@\\config.ini"\r\n'
    'copy "%SRC%" "%APPDATA%\\@T@\\" >nul\r\nif errorlevel 1 echo "copy of @W@ failed (@N@)" & exit /b 1\r\n',
    # a test fixture
    '''const FIXTURE = {"name": "@S@", "path": "C:\\\\data\\\\@W@.csv", "tab": "a\\tb", "n": @N@};
''',
    # terminal colours, a control character written out
    '''print("\\x1b[31merror:\\x1b[0m @W@ failed\\a", file=sys.stderr)  # @S@
''',
]
WORDS = ["invoice", "ledger", "session", "tenant", "payload", "cursor", "shard", "token", "widget"]
TYPES = ["Parser", "Ledger", "Session", "Tenant", "Cursor", "Shard", "Config", "Reader"]
TEXTS = ["naïve café", "Überprüfung fehlgeschlagen", "入力を検証する", "проверка ввода", "déjà vu ✓",
         "🚀 shipped", "señal “lista”", "Zoë’s résumé", "→ ok", "日本語テキスト 😀"]
FILES = ["src/lib.rs", "src/parser.rs", "app/models.py", "web/src/api.js", "cmd/server/main.go",
         "scripts/install.bat", "tests/test_parser.py", "README.md"]
BRANCHES = ["fix/parser-escapes", "feat/ledger-export", "agent/refactor-session", "chore/deps"]
COMMANDS = ["cargo test -p parser -- --nocapture", "pytest -q tests/test_parser.py -k \"escape and not slow\"",
            "npm run build && npm test -- --grep 'unicode'", "go vet ./... && go test ./cmd/...",
            "grep -rn \"\\\\\\\\u[0-9a-f]\\{4\\}\" src/ | head -n 20"]
QUERIES = ["fn parse_\\w+\\(", "\"\\\\[tn]\"", "TODO|FIXME", "import re$", "class \\w+Error"]
UNESCAPED = "\ue000"  # where a malformed text breaks the JSON


def fill(template, v):
    return (template.replace("@F@", v.pick(WORDS) + "_" + v.pick(["load", "parse", "read", "sync"]))
            .replace("@T@", v.pick(TYPES)).replace("@W@", v.pick(WORDS))
            .replace("@N@", str(v.r.randint(1, 4096))).replace("@S@", v.pick(TEXTS)))


def source(v, lo=8192, hi=32768):
    """Source code of lo to hi characters."""
    size = v.r.randint(lo, hi)
    parts, n = [], 0
    while n < size:
        part = fill(v.pick(SNIPPETS), v) + "\n"
        parts.append(part)
        n += len(part)
    return "".join(parts)[:size]


def patch(v):
    """A unified diff of 8-32 KB: hunks of the code above, lines removed
    and added."""
    size = v.r.randint(8192, 32768)
    path = v.pick(FILES)
    out, n, line = [f"--- a/{path}\n+++ b/{path}\n"], 0, 1
    while n < size:
        old = fill(v.pick(SNIPPETS), v).splitlines()
        new = fill(v.pick(SNIPPETS), v).splitlines()
        hunk = (f"@@ -{line},{len(old)} +{line},{len(new)} @@\n" + "".join(f"-{x}\n" for x in old)
                + "".join(f"+{x}\n" for x in new))
        out.append(hunk)
        n += len(hunk)
        line += len(old) + v.r.randint(3, 40)
    return "".join(out)


def description(v):
    """A pull request's Markdown body with code blocks, 8-32 KB."""
    code = source(v, 7000, 30000)
    return (f"## What\n\nFixes the {v.pick(WORDS)} reader: escapes like `\\\"` and `\\\\u00e9` were "
            f"decoded twice ({v.pick(TEXTS)}).\n\n```\n{code}\n```\n\n- [x] tests\n- [ ] docs\n")


def arguments(tool, v):
    a = {}
    if tool == "write_file":
        a["path"] = v.pick(FILES)
        a["content"] = source(v)
        if v.maybe(0.4):
            a["mode"] = v.pick(["overwrite", "create"])
        if v.maybe(0.3):
            a["create_dirs"] = True
    elif tool == "apply_patch":
        a["path"] = v.pick(FILES)
        a["patch"] = patch(v)
        if v.maybe(0.3):
            a["dry_run"] = v.maybe()
    elif tool == "create_pull_request":
        a["title"] = f"Fix {v.pick(WORDS)} escapes ({v.pick(TEXTS)})"
        a["body"] = description(v)
        a["head"] = v.pick(BRANCHES)
        a["base"] = "main"
        if v.maybe(0.3):
            a["draft"] = True
    elif tool == "run_command":
        a["command"] = v.pick(COMMANDS)
        if v.maybe(0.5):
            a["cwd"] = v.pick(["src", "web", "cmd/server", "."])
        if v.maybe(0.5):
            a["timeout_s"] = v.pick([60, 300, 900])
        if v.maybe(0.3):
            a["env"] = {"RUST_BACKTRACE": "1", "LANG": "C.UTF-8"}
    elif tool == "read_file":
        a["path"] = v.pick(FILES)
        if v.maybe(0.5):
            a["start_line"] = v.r.randint(1, 200)
            a["end_line"] = a["start_line"] + v.r.randint(20, 200)
    elif tool == "search_code":
        a["query"] = v.pick(QUERIES)
        if v.maybe(0.5):
            a["glob"] = v.pick(["**/*.rs", "src/**/*.py", "*.{js,ts}"])
        if v.maybe(0.5):
            a["max_results"] = v.pick([20, 50, 200])
    return a


def set_content_lines(args, v):
    """The file as a list of lines, not one string."""
    args["content"] = args["content"].split("\n")
    return "/content"


class Large(Shape):
    name = "large"
    tools = TOOLS
    tool_weights = [30, 20, 10, 20, 12, 8]
    kinds = codes("unknown_tool", "missing_required", "wrong_type", "enum_miss", "pattern_miss", "extra_property",
                  "malformed_arguments", "duplicate_key")
    tables = {
        "wrong_type": {
            "write_file": [set_content_lines, ("create_dirs", "yes")],
            "apply_patch": [("dry_run", "false")],
            "run_command": [("timeout_s", "30"), ("env", ["LANG=C"])],
            "create_pull_request": [("draft", 1)],
        },
        "enum_miss": {"write_file": [("mode", "truncate")], "run_command": [("shell", "zsh")]},
        "pattern_miss": {
            "write_file": [("path", "/etc/hosts"), ("path", "C:\\Users\\dev\\main.rs"),
                           ("path", "src/my file.rs")],
            "apply_patch": [("path", "src//lib.rs")],
            "create_pull_request": [("head", "Fix Parser")],
        },
        "extra_property": {"write_file": [("overwrite", True)], "apply_patch": [("fuzz", 2)],
                           "run_command": [("sudo", True)]},
    }
    unknown_names = ["str_replace_editor", "bash", "write_to_file", "edit_file", "WriteFile"]

    def arguments(self, tool, v):
        return arguments(tool, v)

    def pick_tools(self, v):
        n = v.r.choices([1, 2, 3], weights=[45, 35, 20])[0]
        tools = [v.pick(BIG)] + v.r.choices([name for name, _, _ in self.tools], weights=self.tool_weights,
                                             k=n - 1)
        v.r.shuffle(tools)
        return tools

    def text(self, args, v):
        """Non-ASCII as \\u escapes two times in five."""
        if v.maybe(0.4):
            return json.dumps(args, ensure_ascii=True, separators=(",", ":"))
        return compact(args)

    def duplicated(self, args, v):
        """A short key: the long strings are sent once."""
        return v.pick([k for k, x in args.items() if not (isinstance(x, str) and len(x) > 1000)])

    def malformed(self, args, v):
        """Cut short (the model ran out of tokens, mostly inside the long
        string), or one character JSON does not allow: an escaped quote
        `\\'`, a `\\x41` escape, a raw tab."""
        how = v.pick(["cut", "cut", "quote", "hex", "tab"])
        if how == "cut":
            text = self.text(args, v)
            return text[: v.r.randint(len(text) // 4, len(text) - 1)]
        key = next(k for k in ("content", "patch", "body", "command", "query", "path") if k in args)
        at = v.r.randint(0, len(args[key]))
        args[key] = args[key][:at] + UNESCAPED + args[key][at:]
        return compact(args).replace(UNESCAPED, {"quote": "\\'", "hex": "\\x41", "tab": "\t"}[how])


class LargeAnthropic(Large):
    """The calls of `large` as Anthropic Messages responses, as a coding
    agent built on Claude gets them: each `tool_use` block's `input` the
    arguments object itself, its 8-32 KB string read once by every reader
    (no arguments string to decode first)."""
    name = "large-anthropic"
    wire = "anthropic"
