"""The first shape, `openai`: OpenAI Chat Completions responses calling 12
realistic tools with nested objects, enums, formats and patterns, 1 to 5
calls each, about a fifth with exactly one defect of ten kinds. Its bytes
are those bench/workload.py has always written for a seed."""
import string

from .common import Shape, codes, obj

# --- the tools ---------------------------------------------------------------

EMAIL = {"type": "string", "format": "email"}
DATE_TIME = {"type": "string", "format": "date-time"}
UUID = {"type": "string", "format": "uuid"}

TOOLS = [
    ("get_weather", "Get the current weather and a forecast for a location.", obj({
        "location": {"type": "string", "minLength": 1, "maxLength": 100,
                     "description": "City and country, e.g. Paris, France"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
    }, ["location"], closed=True)),
    ("search_orders", "Search a customer's orders.", obj({
        "customer_id": {"type": "string", "pattern": "^cus_[A-Za-z0-9]{14}$"},
        "status": {"type": "array", "uniqueItems": True, "items": {
            "type": "string", "enum": ["pending", "paid", "shipped", "delivered", "refunded"]}},
        "created_after": DATE_TIME,
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "sort": obj({
            "field": {"type": "string", "enum": ["created", "total", "status"]},
            "direction": {"type": "string", "enum": ["asc", "desc"]},
        }, ["field"], closed=True),
    }, ["customer_id"])),
    ("send_email", "Send an email on behalf of the user.", obj({
        "to": {"type": "array", "items": EMAIL, "minItems": 1, "maxItems": 10},
        "cc": {"type": "array", "items": EMAIL, "maxItems": 10},
        "subject": {"type": "string", "minLength": 1, "maxLength": 200},
        "body": {"type": "string", "maxLength": 20000},
        "reply_to": EMAIL,
    }, ["to", "subject", "body"], closed=True)),
    ("create_calendar_event", "Create an event in the user's calendar.", obj({
        "title": {"type": "string", "minLength": 1, "maxLength": 120},
        "start": DATE_TIME,
        "end": DATE_TIME,
        "location": {"type": "string"},
        "attendees": {"type": "array", "maxItems": 50, "items": obj({
            "email": EMAIL, "optional": {"type": "boolean"}}, ["email"], closed=True)},
        "reminders": {"type": "array", "maxItems": 5, "items": obj({
            "method": {"type": "string", "enum": ["email", "popup"]},
            "minutes": {"type": "integer", "minimum": 0, "maximum": 40320},
        }, ["method", "minutes"], closed=True)},
    }, ["title", "start", "end"])),
    ("get_stock_quote", "Get the latest quote for a stock.", obj({
        "symbol": {"type": "string", "pattern": "^[A-Z]{1,5}(\\.[A-Z]{1,2})?$"},
        "exchange": {"type": "string", "enum": ["NASDAQ", "NYSE", "LSE", "XETRA", "TSE"]},
    }, ["symbol"], closed=True)),
    ("create_support_ticket", "Open a support ticket for a customer.", obj({
        "customer_email": EMAIL,
        "subject": {"type": "string", "minLength": 3, "maxLength": 150},
        "description": {"type": "string", "maxLength": 5000},
        "priority": {"type": "string", "enum": ["low", "normal", "high", "urgent"]},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                 "maxItems": 5, "uniqueItems": True},
        "order_id": UUID,
    }, ["customer_email", "subject", "priority"])),
    ("book_flight", "Search and hold a flight booking.", obj({
        "origin": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "IATA airport code"},
        "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "departure_date": {"type": "string", "format": "date"},
        "return_date": {"type": "string", "format": "date"},
        "passengers": obj({
            "adults": {"type": "integer", "minimum": 1, "maximum": 9},
            "children": {"type": "integer", "minimum": 0, "maximum": 8},
        }, ["adults"], closed=True),
        "cabin": {"type": "string", "enum": ["economy", "premium_economy", "business", "first"]},
    }, ["origin", "destination", "departure_date", "passengers"], closed=True)),
    ("fetch_url", "Fetch a web page and return its text.", obj({
        "url": {"type": "string", "format": "uri"},
        "method": {"type": "string", "enum": ["GET", "HEAD"]},
        "timeout_ms": {"type": "integer", "minimum": 100, "maximum": 30000},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
    }, ["url"], closed=True)),
    ("transfer_funds", "Transfer money between two accounts.", obj({
        "from_account": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$"},
        "to_account": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$"},
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000000},
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "CHF", "JPY"]},
        "reference": {"type": "string", "maxLength": 140},
        "idempotency_key": UUID,
    }, ["from_account", "to_account", "amount", "currency", "idempotency_key"], closed=True)),
    ("query_database", "Run a read-only query against the analytics database.", obj({
        "table": {"type": "string", "enum": ["users", "orders", "products", "events", "invoices"]},
        "columns": {"type": "array", "items": {"type": "string", "pattern": "^[a-z_]+$"}},
        "filters": {"type": "array", "maxItems": 10, "items": obj({
            "column": {"type": "string", "pattern": "^[a-z_]+$"},
            "op": {"type": "string", "enum": ["eq", "ne", "lt", "gt", "like", "in"]},
            "value": {"type": ["string", "number", "boolean"]},
        }, ["column", "op", "value"], closed=True)},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
        "order_by": {"type": "string", "pattern": "^[a-z_]+( (asc|desc))?$"},
    }, ["table"])),
    ("update_user_profile", "Update fields of a user's profile.", obj({
        "user_id": UUID,
        "display_name": {"type": "string", "minLength": 1, "maxLength": 64},
        "email": EMAIL,
        "phone": {"type": "string", "pattern": "^\\+[1-9][0-9]{6,14}$"},
        "website": {"type": "string", "format": "uri"},
        "preferences": obj({
            "language": {"type": "string", "pattern": "^[a-z]{2}(-[A-Z]{2})?$"},
            "timezone": {"type": "string"},
            "newsletter": {"type": "boolean"},
        }, closed=True),
    }, ["user_id"], closed=True)),
    ("get_current_time", "Get the current date and time in UTC.",
     {"type": "object", "properties": {}, "additionalProperties": False}),
]
NO_ARGS = "get_current_time"

# --- realistic values --------------------------------------------------------

CITIES = ["Paris, France", "Berlin, Germany", "Zürich, Switzerland", "São Paulo, Brazil",
          "Tokyo, Japan", "New York, NY", "San Francisco, CA", "London, UK", "Kraków, Poland",
          "Montréal, Canada", "Sydney, Australia", "Lagos, Nigeria", "Mumbai, India"]
FIRST = ["alice", "bob", "carol", "dmitri", "elena", "farid", "grace", "hiro", "ines", "jamal",
         "kate", "lars", "maria", "noah", "olga", "priya"]
LAST = ["martin", "schmidt", "tanaka", "okafor", "garcia", "nguyen", "rossi", "kowalski", "silva"]
DOMAINS = ["example.com", "acme.io", "mail.example.org", "contoso.net", "globex.co.uk"]
WORDS = ("the quarterly report is attached please review before our meeting on thursday we "
         "need to confirm the budget numbers and the shipping schedule for the new product "
         "line let me know if anything is missing thanks again for your help with the launch "
         "customer reported that the invoice total does not match the order").split()
SYMBOLS = ["AAPL", "MSFT", "GOOGL", "AMZN", "NVDA", "TSLA", "BRK.B", "SAP", "VOD", "SONY"]
AIRPORTS = ["CDG", "JFK", "LHR", "FRA", "HND", "SFO", "GRU", "ZRH", "WAW", "YUL", "SYD", "BOM"]
TIMEZONES = ["Europe/Paris", "America/New_York", "Asia/Tokyo", "UTC", "Europe/Berlin"]
URLS = ["https://en.wikipedia.org/wiki/Model_Context_Protocol", "https://docs.python.org/3/library/json.html",
        "https://www.example.com/pricing?plan=pro&ref=agent", "https://news.ycombinator.com/item?id=41234567",
        "https://api.github.com/repos/rust-lang/rust/releases/latest", "http://intranet.acme.io/wiki/OnCall"]
COLUMNS = ["id", "email", "created_at", "status", "total", "country", "plan", "user_id", "sku"]


# The same free text in other scripts (`workload.py --text unicode` or
# `escaped`): as many entries, so that a workload picks the same ones.
CITIES_UNICODE = ["Zürich, Schweiz", "São Paulo, Brasil", "Kraków, Polska", "Montréal, Canada",
                  "Москва, Россия", "Αθήνα, Ελλάδα", "東京, 日本", "北京, 中国", "서울, 대한민국",
                  "القاهرة، مصر", "Reykjavík, Ísland", "İstanbul, Türkiye", "München, Deutschland"]
WORDS_UNICODE = ("der Quartalsbericht ist angehängt bitte prüfen avant notre réunion de jeudi nous "
                 "devons confirmer el presupuesto y el calendario de envío для новой линейки "
                 "продуктов дайте знать если чего-то не хватает ευχαριστώ για τη βοήθεια "
                 "請求書の合計が 注文と 一致しません 客户 报告 发票 金额 不符 zażółć gęślą jaźń "
                 "çok teşekkürler 🚚 📦 ✅ señor naïve résumé").split()
assert len(CITIES_UNICODE) == len(CITIES) and len(WORDS_UNICODE) == len(WORDS)


def email(v):
    return v.email(FIRST, LAST, DOMAINS)


def words(v, lo, hi):
    return v.words(WORDS if v.text == "plain" else WORDS_UNICODE, lo, hi)


def city(v):
    return v.pick(CITIES if v.text == "plain" else CITIES_UNICODE)


def iban(v):
    return v.pick(["DE", "FR", "GB", "NL"]) + f"{v.r.randint(10, 99)}" + v.alnum(
        v.r.randint(14, 22), string.ascii_uppercase + string.digits)


def arguments(tool, v):
    """Valid arguments for `tool`, with the optional ones sometimes left out."""
    a = {}
    if tool == "get_weather":
        a["location"] = city(v)
        if v.maybe(0.7):
            a["unit"] = v.pick(["celsius", "fahrenheit"])
        if v.maybe(0.4):
            a["days"] = v.r.randint(1, 14)
    elif tool == "search_orders":
        a["customer_id"] = "cus_" + v.alnum(14)
        if v.maybe(0.6):
            a["status"] = v.r.sample(["pending", "paid", "shipped", "delivered", "refunded"], v.r.randint(1, 3))
        if v.maybe(0.5):
            a["created_after"] = v.date_time()
        a["limit"] = v.r.randint(1, 100)
        if v.maybe(0.5):
            a["sort"] = {"field": v.pick(["created", "total", "status"]), "direction": v.pick(["asc", "desc"])}
    elif tool == "send_email":
        a["to"] = [email(v) for _ in range(v.r.randint(1, 3))]
        if v.maybe(0.3):
            a["cc"] = [email(v)]
        a["subject"] = words(v, 3, 8)
        a["body"] = words(v, 25, 60) + "."
        if v.maybe(0.3):
            a["reply_to"] = email(v)
    elif tool == "create_calendar_event":
        a["title"] = words(v, 2, 5)
        day, hour = v.date(), v.r.randint(8, 17)
        a["start"] = f"{day}T{hour:02d}:00:00Z"
        a["end"] = f"{day}T{hour + 1:02d}:00:00Z"
        if v.maybe(0.5):
            a["location"] = v.pick(["Room 4.12", "Zoom", "Café Central", "HQ, 3rd floor"])
        a["attendees"] = [{"email": email(v), "optional": v.maybe(0.3)} for _ in range(v.r.randint(1, 3))]
        if v.maybe(0.5):
            a["reminders"] = [{"method": v.pick(["email", "popup"]), "minutes": v.pick([5, 10, 30, 60, 1440])}]
    elif tool == "get_stock_quote":
        a["symbol"] = v.pick(SYMBOLS)
        if v.maybe(0.5):
            a["exchange"] = v.pick(["NASDAQ", "NYSE", "LSE", "XETRA", "TSE"])
    elif tool == "create_support_ticket":
        a["customer_email"] = email(v)
        a["subject"] = words(v, 3, 8)
        a["description"] = words(v, 15, 40) + "."
        a["priority"] = v.pick(["low", "normal", "high", "urgent"])
        if v.maybe(0.6):
            a["tags"] = v.r.sample(["billing", "refund", "shipping", "bug", "account", "vip"], v.r.randint(1, 3))
        if v.maybe(0.5):
            a["order_id"] = v.uuid()
    elif tool == "book_flight":
        a["origin"], a["destination"] = v.r.sample(AIRPORTS, 2)
        a["departure_date"] = v.date()
        if v.maybe(0.6):
            a["return_date"] = v.date()
        a["passengers"] = {"adults": v.r.randint(1, 4)}
        if v.maybe(0.3):
            a["passengers"]["children"] = v.r.randint(1, 3)
        a["cabin"] = v.pick(["economy", "premium_economy", "business", "first"])
    elif tool == "fetch_url":
        a["url"] = v.pick(URLS)
        if v.maybe(0.4):
            a["method"] = v.pick(["GET", "HEAD"])
        if v.maybe(0.4):
            a["timeout_ms"] = v.pick([1000, 5000, 10000])
        if v.maybe(0.3):
            a["headers"] = {"Accept": "text/html", "Accept-Language": v.pick(["en-US", "de-DE", "fr-FR"])}
    elif tool == "transfer_funds":
        a["from_account"] = iban(v)
        a["to_account"] = iban(v)
        a["amount"] = v.pick([round(v.r.uniform(1, 5000), 2), v.r.randint(10, 2000)])
        a["currency"] = v.pick(["EUR", "USD", "GBP", "CHF", "JPY"])
        if v.maybe(0.7):
            a["reference"] = "Invoice " + v.alnum(8, string.ascii_uppercase + string.digits)
        a["idempotency_key"] = v.uuid()
    elif tool == "query_database":
        a["table"] = v.pick(["users", "orders", "products", "events", "invoices"])
        if v.maybe(0.6):
            a["columns"] = v.r.sample(COLUMNS, v.r.randint(2, 5))
        a["filters"] = [
            {"column": v.pick(COLUMNS), "op": v.pick(["eq", "ne", "lt", "gt", "like"]),
             "value": v.pick([v.pick(["active", "FR", "pro%", "2026-01-01"]), v.r.randint(0, 500), True])}
            for _ in range(v.r.randint(0, 3))]
        a["limit"] = v.pick([10, 50, 100, 500])
        if v.maybe(0.5):
            a["order_by"] = v.pick(COLUMNS) + v.pick(["", " asc", " desc"])
    elif tool == "update_user_profile":
        a["user_id"] = v.uuid()
        if v.maybe(0.5):
            a["display_name"] = f"{v.pick(FIRST).title()} {v.pick(LAST).title()}"
        if v.maybe(0.4):
            a["email"] = email(v)
        if v.maybe(0.3):
            a["phone"] = "+" + str(v.r.randint(1, 9)) + v.alnum(v.r.randint(8, 11), string.digits)
        if v.maybe(0.2):
            a["website"] = v.pick(URLS)
        if v.maybe(0.5):
            a["preferences"] = {"language": v.pick(["en", "de", "fr-CA", "pt-BR"]),
                                "timezone": v.pick(TIMEZONES), "newsletter": v.maybe()}
    return a


# --- defects -----------------------------------------------------------------
# Each kind: the violation code toolgate must report, and per tool how to
# make one call defective: (key, bad value) pairs the mutation picks from.

WRONG_TYPE = {
    "get_weather": [("days", "3"), ("location", 48.85)],
    "search_orders": [("limit", "20"), ("status", "shipped")],
    "send_email": [("to", "alice.martin@example.com"), ("subject", None)],
    "book_flight": [("passengers", 2)],
    "transfer_funds": [("amount", "250.00")],
    "query_database": [("limit", "100"), ("filters", {"column": "status"})],
}
ENUM_MISS = {
    "get_weather": [("unit", "kelvin")],
    "book_flight": [("cabin", "coach")],
    "create_support_ticket": [("priority", "critical")],
    "transfer_funds": [("currency", "BTC")],
    "query_database": [("table", "passwords")],
}
BAD_FORMAT = {
    "send_email": [("reply_to", "support at example.com")],
    "create_calendar_event": [("start", "next Tuesday at 3pm"), ("end", "2026-03-15 17:00")],
    "create_support_ticket": [("customer_email", "jane.doe@"), ("order_id", "ORD-12345")],
    "book_flight": [("departure_date", "15/03/2026")],
    "fetch_url": [("url", "www.example.com/pricing page")],
    "transfer_funds": [("idempotency_key", "txn-2026-0001")],
    "search_orders": [("created_after", "last week")],
}
PATTERN_MISS = {
    "get_stock_quote": [("symbol", "Apple")],
    "book_flight": [("origin", "Paris"), ("destination", "jfk")],
    "search_orders": [("customer_id", "12345")],
    "update_user_profile": [("phone", "555-0100")],
    "transfer_funds": [("to_account", "12345678")],
}
EXTRA_PROPERTY = {
    "get_weather": [("country", "FR")],
    "send_email": [("bcc", ["audit@example.com"])],
    "book_flight": [("seat", "12A")],
    "update_user_profile": [("role", "admin")],
    "transfer_funds": [("skip_review", True)],
    "get_stock_quote": [("currency", "USD")],
}
UNKNOWN_NAMES = ["get_wether", "delete_user", "execute_shell", "send_sms", "getWeather", "web.search"]


class OpenAI(Shape):
    name = "openai"
    tools = TOOLS
    tool_weights = [14, 10, 9, 7, 9, 7, 6, 8, 5, 8, 5, 12]
    call_counts, call_weights = [1, 2, 3, 4, 5], [36, 30, 18, 10, 6]
    kinds = codes("unknown_tool", "missing_required", "wrong_type", "enum_miss", "bad_format", "pattern_miss",
                  "extra_property", "malformed_arguments", "duplicate_key", "arguments_to_no_arg_tool")
    tables = {"wrong_type": WRONG_TYPE, "enum_miss": ENUM_MISS, "bad_format": BAD_FORMAT,
              "pattern_miss": PATTERN_MISS, "extra_property": EXTRA_PROPERTY}
    no_args = NO_ARGS
    unknown_names = UNKNOWN_NAMES
    free_text = True

    def arguments(self, tool, v):
        return arguments(tool, v)

    def no_arg_extras(self, v):
        return v.pick([{"timezone": v.pick(TIMEZONES)}, {"format": "iso8601"}])


class Responses(OpenAI):
    """The same calls as OpenAI Responses API responses: payload i holds
    the calls and the defect of payload i of `openai`."""
    name = "responses"
    wire = "responses"


class Gemini(OpenAI):
    """The same calls as Gemini `generateContent` answers: payload i holds
    the calls and the defect of payload i of `openai`."""
    name = "gemini"
    wire = "gemini"


class Bedrock(OpenAI):
    """The same calls as Bedrock Converse answers: payload i holds the
    calls and the defect of payload i of `openai`."""
    name = "bedrock"
    wire = "bedrock"


class ChatSse(OpenAI):
    """The same calls as streamed OpenAI Chat Completions answers: payload
    i holds the calls and the defect of payload i of `openai`, in chunks."""
    name = "chat-sse"
    wire = "chat_sse"


class GeminiSse(OpenAI):
    """The same calls as streamed Gemini answers: payload i holds the calls
    and the defect of payload i of `openai`, the calls in one event."""
    name = "gemini-sse"
    wire = "gemini_sse"


class BedrockStream(OpenAI):
    """The same calls as Bedrock ConverseStream answers (JSON lines):
    payload i holds the calls and the defect of payload i of `openai`, each
    call's input in fragments."""
    name = "bedrock-stream"
    wire = "bedrock_stream"


class VercelSse(OpenAI):
    """The same calls as Vercel AI SDK v5 UI message streams: payload i
    holds the calls and the defect of payload i of `openai`, each call's
    arguments in `tool-input-delta`s, then its parsed `input`."""
    name = "vercel-sse"
    wire = "vercel_sse"


class MessagesSse(OpenAI):
    """The same calls as streamed Anthropic Messages answers: payload i
    holds the calls and the defect of payload i of `openai`, in events."""
    name = "messages-sse"
    wire = "messages_sse"


class ResponsesSse(OpenAI):
    """The same calls as streamed OpenAI Responses answers: payload i holds
    the calls and the defect of payload i of `openai`, in events."""
    name = "responses-sse"
    wire = "responses_sse"


class Anthropic(OpenAI):
    """The same calls as Anthropic Messages responses: payload i holds the
    calls and the defect of payload i of `openai`."""
    name = "anthropic"
    wire = "anthropic"


class OpenAIThinking(OpenAI):
    """The calls of `openai` from a reasoning model: its thought in the
    message's `reasoning_content` (DeepSeek, vLLM, OpenRouter)."""
    name = "openai-thinking"
    reasoning = True


class AnthropicThinking(Anthropic):
    """The calls of `anthropic` with extended thinking: a `thinking` block
    and its signature before the blocks."""
    name = "anthropic-thinking"
    reasoning = True


class GeminiThinking(Gemini):
    """The calls of `gemini` from a thinking model: a thought part first,
    the first call's part carrying the `thoughtSignature`."""
    name = "gemini-thinking"
    reasoning = True


class BedrockThinking(Bedrock):
    """The calls of `bedrock` with a model's reasoning: a
    `reasoningContent` block and its signature first."""
    name = "bedrock-thinking"
    reasoning = True


class OpenAIRequest(OpenAI):
    """The calls of `openai` in the Chat Completions request an application
    sends back after running them: the conversation so far, each call's
    result, and the 12 tools declared (about 9 KB)."""
    name = "openai-request"
    wire = "chat_request"


class AnthropicRequest(OpenAI):
    """The calls of `openai` in the Anthropic Messages request an
    application sends back after running them: the conversation so far,
    a `tool_result` block a call, and the 12 tools declared."""
    name = "anthropic-request"
    wire = "messages_request"
