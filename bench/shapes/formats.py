"""`formats`: OpenAI Chat Completions responses, 1 to 4 calls each, whose
arguments are mostly formatted strings (email, date-time, date, uri, uuid,
ipv4), many in arrays, with the forms that make a format checker work:
offsets and fractions of seconds, plus addressing and subdomains, ports,
queries, fragments, percent escapes and IPv6 hosts."""
from .common import Shape, codes, obj

EMAIL = {"type": "string", "format": "email"}
DATE_TIME = {"type": "string", "format": "date-time"}
DATE = {"type": "string", "format": "date"}
URI = {"type": "string", "format": "uri"}
UUID = {"type": "string", "format": "uuid"}
IPV4 = {"type": "string", "format": "ipv4"}


def array(items, most=20):
    return {"type": "array", "items": items, "maxItems": most}


TOOLS = [
    ("create_user", "Create a user account.", obj({
        "id": UUID, "email": EMAIL, "backup_emails": array(EMAIL, 5), "created_at": DATE_TIME,
        "birthday": DATE, "homepage": URI, "signup_ip": IPV4,
    }, ["id", "email", "created_at"], closed=True)),
    ("log_access", "Record an access to a resource.", obj({
        "request_id": UUID, "session_id": UUID, "at": DATE_TIME, "client_ip": IPV4,
        "forwarded_for": array(IPV4, 8), "user": EMAIL, "url": URI, "referrer": URI,
    }, ["request_id", "at", "client_ip", "url"], closed=True)),
    ("schedule_notifications", "Schedule notifications to send later.", obj({
        "batch_id": UUID,
        "notifications": {"type": "array", "minItems": 1, "maxItems": 10, "items": obj({
            "id": UUID, "at": DATE_TIME, "to": EMAIL, "cc": array(EMAIL, 5), "callback": URI,
        }, ["id", "at", "to"], closed=True)},
    }, ["batch_id", "notifications"], closed=True)),
    ("register_webhook", "Register a webhook endpoint.", obj({
        "url": URI, "secret_id": UUID, "owner": EMAIL, "created": DATE_TIME, "expires": DATE,
        "allowed_ips": array(IPV4, 16),
        "events": array({"type": "string", "enum": ["order.created", "order.paid", "user.signup"]}, 3),
    }, ["url", "owner", "events"], closed=True)),
    ("export_report", "Export a report for a period.", obj({
        "from": DATE, "to": DATE, "recipients": array(EMAIL, 10), "upload_to": URI,
        "requested_by": UUID, "requested_at": DATE_TIME,
    }, ["from", "to", "recipients"], closed=True)),
    ("block_addresses", "Block IP addresses until a time.", obj({
        "ips": {"type": "array", "minItems": 1, "maxItems": 32, "items": IPV4},
        "until": DATE_TIME, "ticket": UUID, "reported_by": EMAIL, "evidence": URI,
    }, ["ips", "until", "ticket"], closed=True)),
]

LOCAL = ["alice", "bob.smith", "carol+billing", "d.o'neil", "eve_42", "frank-ops", "grace.hopper"]
DOMAINS = ["example.com", "mail.acme.io", "eu.corp.globex.co.uk", "xn--bcher-kva.de", "contoso.net"]
URLS = ["https://api.acme.io/v2/orders?status=paid&limit=50#page-2",
        "https://en.wikipedia.org/wiki/ISO_8601", "http://[2001:db8::17]:8080/health",
        "https://hooks.example.com/in/T0A1B2C3/abc%20def", "ftp://files.example.org/pub/report.csv",
        "https://user:pass@internal.acme.io:8443/admin/", "urn:isbn:0451450523",
        "mailto:ops@acme.io?subject=alert"]


def email(v):
    return f"{v.pick(LOCAL)}@{v.pick(DOMAINS)}"


def date_time(v):
    fraction = v.pick(["", "", ".5", ".123", ".123456"])
    zone = v.pick(["Z", "Z", "+02:00", "-05:00", "+05:30", "+00:00"])
    return (f"{v.date()}T{v.r.randint(0, 23):02d}:{v.r.randint(0, 59):02d}:{v.r.randint(0, 59):02d}"
            f"{fraction}{zone}")


def ipv4(v):
    return ".".join(str(v.r.randint(1, 254)) for _ in range(4))


def arguments(tool, v):
    a = {}
    if tool == "create_user":
        a = {"id": v.uuid(), "email": email(v), "created_at": date_time(v)}
        if v.maybe(0.5):
            a["backup_emails"] = [email(v) for _ in range(v.r.randint(1, 3))]
        if v.maybe(0.5):
            a["birthday"] = f"19{v.r.randint(50, 99)}-{v.r.randint(1, 12):02d}-{v.r.randint(1, 28):02d}"
        if v.maybe(0.4):
            a["homepage"] = v.pick(URLS)
        a["signup_ip"] = ipv4(v)
    elif tool == "log_access":
        a = {"request_id": v.uuid(), "session_id": v.uuid(), "at": date_time(v), "client_ip": ipv4(v),
             "url": v.pick(URLS)}
        if v.maybe(0.6):
            a["forwarded_for"] = [ipv4(v) for _ in range(v.r.randint(1, 4))]
        if v.maybe(0.7):
            a["user"] = email(v)
        if v.maybe(0.4):
            a["referrer"] = v.pick(URLS)
    elif tool == "schedule_notifications":
        a = {"batch_id": v.uuid(), "notifications": []}
        for _ in range(v.r.randint(1, 5)):
            n = {"id": v.uuid(), "at": date_time(v), "to": email(v)}
            if v.maybe(0.3):
                n["cc"] = [email(v)]
            if v.maybe(0.5):
                n["callback"] = v.pick(URLS)
            a["notifications"].append(n)
    elif tool == "register_webhook":
        a = {"url": v.pick(URLS), "owner": email(v),
             "events": v.r.sample(["order.created", "order.paid", "user.signup"], v.r.randint(1, 3))}
        a["secret_id"] = v.uuid()
        if v.maybe(0.6):
            a["created"] = date_time(v)
        if v.maybe(0.5):
            a["expires"] = v.date()
        if v.maybe(0.5):
            a["allowed_ips"] = [ipv4(v) for _ in range(v.r.randint(1, 6))]
    elif tool == "export_report":
        a = {"from": v.date(), "to": v.date(), "recipients": [email(v) for _ in range(v.r.randint(1, 4))]}
        if v.maybe(0.6):
            a["upload_to"] = v.pick(URLS)
        a["requested_by"] = v.uuid()
        a["requested_at"] = date_time(v)
    else:
        a = {"ips": [ipv4(v) for _ in range(v.r.randint(1, 8))], "until": date_time(v), "ticket": v.uuid()}
        if v.maybe(0.6):
            a["reported_by"] = email(v)
        if v.maybe(0.4):
            a["evidence"] = v.pick(URLS)
    return a


# Values that look right and are not, as models write them: each is
# rejected by the format it is given to.
BAD = {
    "email": ["jane.doe@", "support at acme.io", "a@b@acme.io", "bob smith@example.com", "<ops@acme.io>"],
    "date-time": ["2026-03-15 17:00", "2026-13-01T09:00:00Z", "2026-03-15T25:00:00Z", "next Tuesday 3pm",
                  "2026-03-15T09:00:00", "15/03/2026T09:00:00Z"],
    "date": ["2026-02-30", "15/03/2026", "2026-3-5", "March 15, 2026", "2026-03-15T00:00:00Z"],
    "uri": ["www.acme.io/pricing", "/v2/orders", "https://acme.io/a path", "acme.io", "http//acme.io"],
    "uuid": ["ORD-12345", "123e4567-e89b-12d3-a456-42661417400", "{123e4567-e89b-12d3-a456-426614174000}",
             "123e4567e89b12d3a456426614174000x"],
    "ipv4": ["256.1.1.1", "10.0.0", "192.168.1.1/24", "::1", "10.0.0.300", "1.2.3.4.5"],
}


def bad(fmt):
    """Make one formatted string of the arguments invalid: pick one such
    string (at any depth) and replace it; the pointer is where it was."""
    def change(args, v):
        spots = list(formatted(args, "", fmt))
        path, parent, key = v.pick(spots)
        parent[key] = v.pick(BAD[fmt])
        return path
    return change


def formatted(node, path, fmt, key=None, parent=None):
    """(pointer, parent, key) of every string a tool's schema formats as
    `fmt`, found by the value's own look."""
    if isinstance(node, dict):
        for k, child in node.items():
            yield from formatted(child, f"{path}/{k}", fmt, k, node)
    elif isinstance(node, list):
        for k, child in enumerate(node):
            yield from formatted(child, f"{path}/{k}", fmt, k, node)
    elif isinstance(node, str) and looks_like(node) == fmt:
        yield path, parent, key


def looks_like(text):
    if "@" in text and ":" not in text:
        return "email"
    if text.count("-") == 4 and len(text) == 36:
        return "uuid"
    if len(text) == 10 and text[4] == "-":
        return "date"
    if "T" in text and text[:4].isdigit():
        return "date-time"
    if text.count(".") == 3 and all(p.isdigit() for p in text.split(".")):
        return "ipv4"
    if ":" in text:
        return "uri"
    return None


# The tools whose arguments always hold a string of each format.
ALWAYS = {
    "email": ["create_user", "schedule_notifications", "register_webhook", "export_report"],
    "date-time": ["create_user", "log_access", "schedule_notifications", "export_report", "block_addresses"],
    "date": ["export_report"],
    "uri": ["log_access", "register_webhook"],
    "uuid": ["create_user", "log_access", "schedule_notifications", "register_webhook", "export_report",
             "block_addresses"],
    "ipv4": ["create_user", "log_access", "block_addresses"],
}


class Formats(Shape):
    name = "formats"
    tools = TOOLS
    tool_weights = [20, 25, 15, 12, 12, 16]
    call_counts, call_weights = [1, 2, 3, 4], [35, 35, 20, 10]
    kinds = codes("unknown_tool", "missing_required", "bad_email", "bad_date_time", "bad_date", "bad_uri",
                  "bad_uuid", "bad_ipv4", "malformed_arguments")
    tables = {f"bad_{fmt.replace('-', '_')}": {tool: [bad(fmt)] for tool in tools}
              for fmt, tools in ALWAYS.items()}
    unknown_names = ["create_users", "log", "block_ip", "registerWebhook"]

    def arguments(self, tool, v):
        return arguments(tool, v)
