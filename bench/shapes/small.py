"""`small`: OpenAI Chat Completions responses with 10 parallel calls each,
every one with tiny arguments (a key or two), as an agent fanning out
lookups sends them: the cost per call, not per byte, is what counts."""
from .common import Shape, codes, obj

TOOLS = [
    ("get_user", "Look up a user by id.", obj({
        "id": {"type": "integer", "minimum": 1}}, ["id"], closed=True)),
    ("get_price", "The current price of a product.", obj({
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}}, ["sku"], closed=True)),
    ("set_flag", "Turn a feature flag on or off.", obj({
        "name": {"type": "string", "maxLength": 32},
        "on": {"type": "boolean"}}, ["name", "on"], closed=True)),
    ("get_weather", "The weather in a city.", obj({
        "city": {"type": "string", "minLength": 1, "maxLength": 60},
        "unit": {"type": "string", "enum": ["c", "f"]}}, ["city"], closed=True)),
    ("read_file", "Read a file of the workspace.", obj({
        "path": {"type": "string", "pattern": "^[a-z0-9_./-]+$"}}, ["path"], closed=True)),
    ("add", "Add two numbers.", obj({
        "a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"], closed=True)),
    ("define", "Define a word.", obj({
        "word": {"type": "string", "maxLength": 40},
        "lang": {"type": "string", "enum": ["en", "de", "fr", "es"]}}, ["word"], closed=True)),
    ("get_status", "The service's status.",
     {"type": "object", "properties": {}, "additionalProperties": False}),
]
NO_ARGS = "get_status"

CITIES = ["Paris", "Berlin", "Zürich", "Tokyo", "Lagos", "Lima", "Oslo", "Kraków"]
FLAGS = ["beta_ui", "dark_mode", "new_checkout", "fast_search", "v2_api"]
FILES = ["readme.md", "src/main.rs", "docs/api.md", "cargo.toml", "tests/a.py", "notes.txt"]
WORDS = ["ephemeral", "gauche", "zeitgeist", "naïve", "serendipity", "quorum", "fjord"]


def arguments(tool, v):
    if tool == "get_user":
        return {"id": v.r.randint(1, 99999)}
    if tool == "get_price":
        return {"sku": v.alnum(3, "ABCDEFGHJKLMNPQRSTUVWXYZ") + "-" + v.alnum(4, "0123456789")}
    if tool == "set_flag":
        return {"name": v.pick(FLAGS), "on": v.maybe()}
    if tool == "get_weather":
        a = {"city": v.pick(CITIES)}
        if v.maybe(0.3):
            a["unit"] = v.pick(["c", "f"])
        return a
    if tool == "read_file":
        return {"path": v.pick(FILES)}
    if tool == "add":
        return {"a": v.r.randint(-50, 500), "b": v.pick([v.r.randint(0, 99), round(v.r.uniform(0, 10), 2)])}
    if tool == "define":
        a = {"word": v.pick(WORDS)}
        if v.maybe(0.4):
            a["lang"] = v.pick(["en", "de", "fr", "es"])
        return a
    return {}


class Small(Shape):
    name = "small"
    tools = TOOLS
    tool_weights = [14, 12, 8, 12, 10, 8, 8, 6]
    call_counts, call_weights = [10], [1]
    kinds = codes("unknown_tool", "missing_required", "wrong_type", "enum_miss", "pattern_miss", "extra_property",
                  "malformed_arguments", "duplicate_key", "arguments_to_no_arg_tool")
    tables = {
        "wrong_type": {
            "get_user": [("id", "42"), ("id", 4.5)],
            "set_flag": [("on", "true"), ("on", 1)],
            "add": [("a", "3"), ("b", None)],
            "get_weather": [("city", ["Paris"])],
        },
        "enum_miss": {"get_weather": [("unit", "kelvin"), ("unit", "C")],
                      "define": [("lang", "english"), ("lang", "jp")]},
        "pattern_miss": {"get_price": [("sku", "abc-1234"), ("sku", "ABC1234")],
                         "read_file": [("path", "C:\\temp\\notes.txt"), ("path", "Src/Main.rs")]},
        "extra_property": {"get_user": [("fields", "all")], "add": [("c", 1)],
                           "read_file": [("lines", 20)], "set_flag": [("ttl", 60)]},
    }
    no_args = NO_ARGS
    unknown_names = ["get_users", "multiply", "rm", "getUser", "set-flag"]

    def arguments(self, tool, v):
        return arguments(tool, v)

    def no_arg_extras(self, v):
        return v.pick([{"verbose": True}, {"region": "eu"}])
