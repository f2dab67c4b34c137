"""`deep`: OpenAI Chat Completions responses, 1 to 3 calls each, to tools
whose schemas are built as generated ones are (from Pydantic or Zod
models): `$defs` and `$ref`, discriminated `oneOf`, `allOf` composition
closed with `unevaluatedProperties: false`, recursive filter and workflow
trees, arguments nested five to eight levels."""
from .common import Shape, codes, obj


def ref(name):
    return {"$ref": f"#/$defs/{name}"}


def const(value):
    return {"const": value}


STRING = {"type": "string", "minLength": 1, "maxLength": 200}
MONEY = obj({"amount": {"type": "string", "pattern": "^-?[0-9]{1,9}\\.[0-9]{2}$"},
             "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY"]}},
            ["amount", "currency"], closed=True)

INVOICE = {
    "$defs": {
        "address": obj({
            "line1": STRING, "line2": STRING, "city": STRING,
            "postal_code": {"type": "string", "pattern": "^[A-Z0-9][A-Z0-9 -]{2,9}$"},
            "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
        }, ["line1", "city", "country"], closed=True),
        "party": obj({
            "name": STRING,
            "tax_id": {"type": "string", "pattern": "^[A-Z]{2}[0-9A-Z]{8,12}$"},
            "email": {"type": "string", "format": "email"},
            "address": ref("address"),
        }, ["name", "address"], closed=True),
        "money": MONEY,
        "line": {"oneOf": [
            obj({"kind": const("product"), "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                 "quantity": {"type": "integer", "minimum": 1}, "unit_price": ref("money")},
                ["kind", "sku", "quantity", "unit_price"], closed=True),
            obj({"kind": const("service"), "description": STRING,
                 "hours": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000}, "rate": ref("money")},
                ["kind", "description", "hours", "rate"], closed=True),
            obj({"kind": const("discount"), "percent": {"type": "number", "minimum": 0, "maximum": 100},
                 "reason": STRING}, ["kind", "percent"], closed=True),
        ]},
    },
    **obj({
        "seller": ref("party"), "buyer": ref("party"),
        "lines": {"type": "array", "minItems": 1, "maxItems": 50, "items": ref("line")},
        "due": {"type": "string", "format": "date"},
        "notes": {"type": "string", "maxLength": 2000},
    }, ["seller", "buyer", "lines"], closed=True),
}

DEPLOY = {
    "$defs": {
        "meta": obj({
            "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]{1,62}$"},
            "labels": {"type": "object", "maxProperties": 16,
                       "additionalProperties": {"type": "string", "maxLength": 63}},
        }, ["name"]),
        "env_var": {
            "type": "object",
            "properties": {"name": {"type": "string", "pattern": "^[A-Z_][A-Z0-9_]*$"},
                           "value": {"type": "string"}, "secret": ref("secret_ref")},
            "required": ["name"],
            "oneOf": [{"required": ["value"]}, {"required": ["secret"]}],
            "unevaluatedProperties": False,
        },
        "secret_ref": obj({"name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
                           "key": {"type": "string", "minLength": 1}}, ["name", "key"], closed=True),
        "resources": obj({"cpu": {"type": "string", "pattern": "^[0-9]+m?$"},
                          "memory": {"type": "string", "pattern": "^[0-9]+(Mi|Gi)$"}}, closed=True),
        "container": {
            "type": "object",
            "allOf": [ref("meta")],
            "properties": {
                "image": {"type": "string", "pattern": "^[a-z0-9./-]+(:[A-Za-z0-9._-]+)?$"},
                "command": {"type": "array", "items": {"type": "string"}},
                "env": {"type": "array", "items": ref("env_var")},
                "ports": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 65535}},
                "resources": {"type": "object", "properties": {"requests": ref("resources"),
                                                               "limits": ref("resources")},
                              "additionalProperties": False},
            },
            "required": ["image"],
            "unevaluatedProperties": False,
        },
    },
    "type": "object",
    "allOf": [ref("meta")],
    "properties": {
        "namespace": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 100},
        "containers": {"type": "array", "minItems": 1, "items": ref("container")},
        "strategy": {"oneOf": [
            obj({"type": const("rolling"), "max_surge": {"type": "integer", "minimum": 0}}, ["type"],
                closed=True),
            obj({"type": const("recreate")}, ["type"], closed=True),
        ]},
    },
    "required": ["containers"],
    "unevaluatedProperties": False,
}

FIELDS = ["price", "brand", "color", "rating", "in_stock", "category", "size"]
SEARCH = {
    "$defs": {
        "filter": {"oneOf": [
            obj({"all": {"type": "array", "minItems": 1, "items": ref("filter")}}, ["all"], closed=True),
            obj({"any": {"type": "array", "minItems": 1, "items": ref("filter")}}, ["any"], closed=True),
            obj({"not": ref("filter")}, ["not"], closed=True),
            ref("condition"),
        ]},
        "condition": obj({
            "field": {"type": "string", "enum": FIELDS},
            "op": {"type": "string", "enum": ["eq", "ne", "lt", "gt", "in", "prefix"]},
            "value": {"type": ["string", "number", "boolean", "array"], "items": {"type": ["string", "number"]}},
        }, ["field", "op", "value"], closed=True),
        "sort_key": obj({"field": {"type": "string", "enum": FIELDS},
                         "order": {"type": "string", "enum": ["asc", "desc"]}}, ["field"], closed=True),
    },
    **obj({
        "query": {"type": "string", "maxLength": 200},
        "filter": ref("filter"),
        "sort": {"type": "array", "maxItems": 3, "items": ref("sort_key")},
        "page": obj({"size": {"type": "integer", "minimum": 1, "maximum": 100},
                     "cursor": {"type": "string"}}, closed=True),
    }, closed=True),
}

def step_kind(kind, properties, required):
    return obj({"id": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"}, "type": const(kind), **properties},
               ["id", "type", *required], closed=True)


WORKFLOW = {
    "$defs": {
        "step": {"oneOf": [ref("http_step"), ref("script_step"), ref("wait_step"), ref("branch_step")]},
        "http_step": step_kind("http", {
            "url": {"type": "string", "format": "uri"},
            "method": {"type": "string", "enum": ["GET", "POST", "PUT", "DELETE"]},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "retry": ref("retry")}, ["url", "method"]),
        "script_step": step_kind("script", {
            "language": {"type": "string", "enum": ["python", "javascript", "bash"]},
            "source": {"type": "string", "maxLength": 4000}}, ["language", "source"]),
        "wait_step": step_kind("wait", {"seconds": {"type": "integer", "minimum": 1, "maximum": 86400}},
                               ["seconds"]),
        "branch_step": step_kind("branch", {
            "condition": {"type": "string", "minLength": 1},
            "then": {"type": "array", "items": ref("step")},
            "else": {"type": "array", "items": ref("step")}}, ["condition", "then"]),
        "retry": obj({"attempts": {"type": "integer", "minimum": 1, "maximum": 10},
                      "backoff": {"type": "string", "enum": ["fixed", "exponential"]}}, ["attempts"],
                     closed=True),
    },
    **obj({
        "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
        "trigger": {"oneOf": [
            obj({"cron": {"type": "string", "pattern": "^[0-9*/,-]+( [0-9*/,-]+){4}$"}}, ["cron"], closed=True),
            obj({"event": {"type": "string", "enum": ["push", "order.created", "user.signup"]}}, ["event"],
                closed=True),
        ]},
        "steps": {"type": "array", "minItems": 1, "items": ref("step")},
    }, ["name", "trigger", "steps"], closed=True),
}

PERSON = {
    "$defs": {
        "person": obj({
            "given_name": STRING, "family_name": STRING,
            "birth_date": {"type": "string", "format": "date"},
            "contact": ref("contact"),
        }, ["given_name", "family_name"]),
        "contact": obj({
            "emails": {"type": "array", "items": obj({"address": {"type": "string", "format": "email"},
                                                       "primary": {"type": "boolean"}}, ["address"], closed=True)},
            "phones": {"type": "array", "items": obj({
                "number": {"type": "string", "pattern": "^\\+[1-9][0-9]{6,14}$"},
                "kind": {"type": "string", "enum": ["mobile", "home", "work"]}}, ["number"], closed=True)},
        }, closed=True),
        "money": MONEY,
    },
    # The person's fields by `allOf`, the employment's beside it, nothing else.
    "type": "object",
    "allOf": [ref("person")],
    "properties": {
        "employee_id": {"type": "string", "pattern": "^E[0-9]{6}$"},
        "department": {"type": "string", "enum": ["engineering", "sales", "support", "finance"]},
        "manager": {"oneOf": [{"type": "null"}, ref("person")]},
        "salary": ref("money"),
    },
    "required": ["employee_id", "department"],
    "unevaluatedProperties": False,
}

TOOLS = [
    ("create_invoice", "Create an invoice between two parties.", INVOICE),
    ("deploy_service", "Deploy a service's containers.", DEPLOY),
    ("search_catalog", "Search the product catalog with a filter tree.", SEARCH),
    ("create_workflow", "Create an automation workflow.", WORKFLOW),
    ("add_employee", "Add an employee record.", PERSON),
]

CITIES = [("Paris", "FR", "75011"), ("Berlin", "DE", "10115"), ("London", "GB", "SW1A 1AA"),
          ("Zürich", "CH", "8001"), ("Kraków", "PL", "30-001"), ("Austin", "US", "78701")]
NAMES = ["Acme GmbH", "Globex S.A.", "Initech Ltd", "Umbrella Corp", "Soylent Oy", "Hooli Inc."]
GIVEN = ["Alice", "Bob", "Chloé", "Dmitri", "Elena", "Farid", "Grace", "Hiro"]
FAMILY = ["Martin", "Schmidt", "Tanaka", "Okafor", "García", "Nguyen", "Rossi"]
IMAGES = ["ghcr.io/acme/api:1.4.2", "nginx:1.27", "redis:7-alpine", "registry.acme.io/worker:2026.03"]


def money(v, lo=1, hi=5000):
    return {"amount": f"{v.r.uniform(lo, hi):.2f}", "currency": v.pick(["EUR", "USD", "GBP"])}


def address(v):
    city, country, postal = v.pick(CITIES)
    a = {"line1": f"{v.r.randint(1, 200)} {v.pick(['Main St', 'Rue de la Paix', 'Hauptstraße'])}",
         "city": city, "country": country}
    if v.maybe(0.7):
        a["postal_code"] = postal
    return a


def party(v):
    p = {"name": v.pick(NAMES), "address": address(v)}
    if v.maybe(0.5):
        p["tax_id"] = v.pick(["DE", "FR", "GB"]) + v.alnum(10, "0123456789")
    if v.maybe(0.5):
        p["email"] = f"billing@{v.pick(['acme.io', 'globex.com', 'initech.co.uk'])}"
    return p


def invoice_line(v):
    kind = v.pick(["product", "product", "service", "discount"])
    if kind == "product":
        return {"kind": kind, "sku": v.alnum(3, "ABCDEFGHJKLMNP") + "-" + v.alnum(4, "0123456789"),
                "quantity": v.r.randint(1, 20), "unit_price": money(v, 1, 500)}
    if kind == "service":
        return {"kind": kind, "description": v.pick(["Consulting", "Setup", "Support, March"]),
                "hours": v.pick([1, 2.5, 8, 16]), "rate": money(v, 50, 200)}
    return {"kind": kind, "percent": v.pick([5, 10, 12.5]), "reason": "loyalty"}


def env_var(v):
    name = v.pick(["DATABASE_URL", "LOG_LEVEL", "API_KEY", "REGION", "FEATURE_FLAGS"])
    if v.maybe(0.4):
        return {"name": name, "secret": {"name": v.pick(["db-creds", "api-keys"]), "key": name.lower()}}
    return {"name": name, "value": v.pick(["info", "eu-west-1", "postgres://db:5432/app", "a,b,c"])}


def container(v):
    c = {"name": v.pick(["api", "worker", "cache", "proxy"]), "image": v.pick(IMAGES)}
    if v.maybe(0.5):
        c["command"] = v.pick([["serve", "--port", "8080"], ["work", "--queue", "default"]])
    c["env"] = [env_var(v) for _ in range(v.r.randint(1, 4))]
    if v.maybe(0.6):
        c["ports"] = [v.pick([80, 443, 8080, 6379])]
    c["resources"] = {"requests": {"cpu": v.pick(["100m", "250m", "1"]), "memory": v.pick(["128Mi", "1Gi"])}}
    if v.maybe(0.5):
        c["resources"]["limits"] = {"cpu": "2", "memory": "2Gi"}
    if v.maybe(0.3):
        c["labels"] = {"tier": v.pick(["backend", "cache"]), "team": "platform"}
    return c


def condition(v):
    field = v.pick(FIELDS)
    op = v.pick(["eq", "ne", "lt", "gt", "in", "prefix"])
    value = {"in": [v.pick(["red", "blue", "green"]), v.pick(["black", "white"])],
             "lt": v.r.randint(10, 500), "gt": v.r.randint(1, 5)}.get(op, v.pick(["acme", "shoes", True, 42]))
    return {"field": field, "op": op, "value": value}


def filter_tree(v, depth):
    if depth <= 0 or v.maybe(0.3):
        return condition(v)
    kind = v.pick(["all", "all", "any", "not"])
    if kind == "not":
        return {"not": filter_tree(v, depth - 1)}
    return {kind: [filter_tree(v, depth - 1) for _ in range(v.r.randint(2, 3))]}


def step(v, depth, n):
    kind = v.pick(["http", "http", "script", "wait", "branch"] if depth > 0 else ["http", "script", "wait"])
    s = {"id": f"step_{n}", "type": kind}
    if kind == "http":
        s["url"] = v.pick(["https://api.acme.io/v1/orders", "https://hooks.slack.com/services/T0/B0/x"])
        s["method"] = v.pick(["GET", "POST"])
        if v.maybe(0.4):
            s["retry"] = {"attempts": v.r.randint(1, 5), "backoff": v.pick(["fixed", "exponential"])}
        if v.maybe(0.3):
            s["headers"] = {"Content-Type": "application/json"}
    elif kind == "script":
        s["language"] = v.pick(["python", "javascript", "bash"])
        s["source"] = v.pick(["print(event['order']['id'])", "return {ok: true};", "echo \"$ORDER_ID\""])
    elif kind == "wait":
        s["seconds"] = v.pick([30, 300, 3600])
    else:
        s["condition"] = v.pick(["order.total > 100", "user.country == 'DE'"])
        s["then"] = [step(v, depth - 1, n * 10 + k) for k in range(1, v.r.randint(2, 3))]
        if v.maybe(0.5):
            s["else"] = [step(v, depth - 1, n * 10 + 9)]
    return s


def person(v):
    p = {"given_name": v.pick(GIVEN), "family_name": v.pick(FAMILY)}
    if v.maybe(0.6):
        p["birth_date"] = f"19{v.r.randint(60, 99)}-{v.r.randint(1, 12):02d}-{v.r.randint(1, 28):02d}"
    if v.maybe(0.7):
        local = p["given_name"].lower().replace("é", "e")  # `email` takes ASCII only
        p["contact"] = {"emails": [{"address": f"{local}@acme.io", "primary": True}]}
        if v.maybe(0.5):
            p["contact"]["phones"] = [{"number": "+4930" + v.alnum(7, "0123456789"), "kind": "work"}]
    return p


def arguments(tool, v):
    if tool == "create_invoice":
        a = {"seller": party(v), "buyer": party(v), "lines": [invoice_line(v) for _ in range(v.r.randint(1, 4))]}
        if v.maybe(0.6):
            a["due"] = v.date()
        return a
    if tool == "deploy_service":
        a = {"name": v.pick(["checkout", "search-api", "billing"]), "namespace": "prod",
             "replicas": v.r.randint(1, 6), "containers": [container(v) for _ in range(v.r.randint(1, 2))]}
        if v.maybe(0.5):
            a["strategy"] = v.pick([{"type": "rolling", "max_surge": 1}, {"type": "recreate"}])
        return a
    if tool == "search_catalog":
        a = {"query": v.pick(["running shoes", "usb-c cable", "café mug", ""]), "filter": filter_tree(v, 4)}
        if v.maybe(0.5):
            a["sort"] = [{"field": v.pick(FIELDS), "order": v.pick(["asc", "desc"])}]
        if v.maybe(0.5):
            a["page"] = {"size": v.pick([20, 50]), "cursor": v.alnum(16)}
        return a
    if tool == "create_workflow":
        trigger = v.pick([{"cron": "0 9 * * 1-5"}, {"event": "order.created"}, {"cron": "*/15 * * * *"}])
        return {"name": v.pick(["order-sync", "welcome-mail", "nightly-report"]), "trigger": trigger,
                "steps": [step(v, 2, k) for k in range(1, v.r.randint(2, 5))]}
    e = person(v)
    e["employee_id"] = "E" + v.alnum(6, "0123456789")
    e["department"] = v.pick(["engineering", "sales", "support", "finance"])
    e["manager"] = None if v.maybe(0.3) else person(v)
    if v.maybe(0.5):
        e["salary"] = money(v, 40000, 120000)
    return e


# Defects deep inside: each changes the arguments and returns the JSON
# Pointer toolgate reports (that of the `oneOf` for a call no branch or two
# branches of it accept).


def bad_postal_code(args, v):
    args["buyer"]["address"]["postal_code"] = "75 011 PARIS"
    return "/buyer/address/postal_code"


def missing_city(args, v):
    del args["seller"]["address"]["city"]
    return "/seller/address/city"


def unknown_line_kind(args, v):
    k = len(args["lines"]) - 1
    args["lines"][k]["kind"] = "subscription"
    return f"/lines/{k}"


def price_as_number(args, v):
    args["lines"].append({"kind": "product", "sku": "ABC-1234", "quantity": 1,
                          "unit_price": {"amount": 19.99, "currency": "EUR"}})
    return f"/lines/{len(args['lines']) - 1}"


def env_both(args, v):
    env = args["containers"][0]["env"]
    env.append({"name": "TOKEN", "value": "x", "secret": {"name": "api-keys", "key": "token"}})
    return f"/containers/0/env/{len(env) - 1}"


def container_extra(args, v):
    args["containers"][-1]["imagePullPolicy"] = "Always"
    return f"/containers/{len(args['containers']) - 1}/imagePullPolicy"


def bad_memory(args, v):
    args["containers"][0]["resources"]["requests"]["memory"] = "1GB"
    return "/containers/0/resources/requests/memory"


def env_extra(args, v):
    args["containers"][0]["env"][0]["valueFrom"] = "configmap"
    return "/containers/0/env/0/valueFrom"


def deploy_extra(args, v):
    args["region"] = "eu-west-1"
    return "/region"


def deepest(node, path=()):
    """The path to the deepest condition of a filter tree."""
    children = [((key, k), child) for key in ("all", "any") for k, child in enumerate(node.get(key, []))]
    if "not" in node:
        children.append((("not",), node["not"]))
    return max((deepest(child, path + step) for step, child in children), key=len, default=path)


def at(node, path):
    for key in path:
        node = node[key]
    return node


def bad_filter_op(args, v):
    path = deepest(args["filter"])
    at(args["filter"], path)["op"] = "contains"
    return "/filter"


def bad_step_url(args, v):
    args["steps"].append({"id": "notify", "type": "http", "url": "hooks.acme.io/notify", "method": "POST"})
    return f"/steps/{len(args['steps']) - 1}"


def step_extra(args, v):
    args["steps"][0]["timeout"] = 30
    return "/steps/0"


def bad_trigger(args, v):
    args["trigger"] = {"cron": "every day at 9"}
    return "/trigger"


def manager_email(args, v):
    args["manager"] = {"given_name": "Ines", "family_name": "Silva",
                       "contact": {"emails": [{"address": "ines.silva(at)acme.io"}]}}
    return "/manager"


def employee_extra(args, v):
    args["nickname"] = "ace"
    return "/nickname"


def drop(key):
    """A required argument left out."""
    def change(args, v):
        del args[key]
        return "/" + key
    return change


def bad_department(args, v):
    args["department"] = "legal"
    return "/department"


class Deep(Shape):
    name = "deep"
    tools = TOOLS
    tool_weights = [25, 20, 25, 15, 15]
    call_counts, call_weights = [1, 2, 3], [45, 35, 20]
    kinds = codes("unknown_tool", "missing_required", "deep_missing_required", "deep_pattern_miss", "one_of_none",
                  "one_of_two", "unevaluated_property", "enum_miss", "duplicate_key")
    tables = {
        "missing_required": {"create_invoice": [drop("lines"), drop("buyer")],
                             "deploy_service": [drop("containers")],
                             "create_workflow": [drop("trigger"), drop("steps")],
                             "add_employee": [drop("employee_id"), drop("department")]},
        "deep_missing_required": {"create_invoice": [missing_city]},
        "deep_pattern_miss": {"create_invoice": [bad_postal_code], "deploy_service": [bad_memory]},
        "one_of_none": {"create_invoice": [unknown_line_kind, price_as_number],
                        "search_catalog": [bad_filter_op],
                        "create_workflow": [bad_step_url, step_extra, bad_trigger],
                        "add_employee": [manager_email]},
        "one_of_two": {"deploy_service": [env_both]},
        "unevaluated_property": {"deploy_service": [container_extra, deploy_extra, env_extra],
                                 "add_employee": [employee_extra]},
        "enum_miss": {"add_employee": [bad_department]},
    }
    unknown_names = ["create_invoices", "deploy", "kubectl_apply", "searchCatalog"]

    def arguments(self, tool, v):
        return arguments(tool, v)
