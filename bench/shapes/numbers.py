"""`numbers`: OpenAI Chat Completions responses, 1 to 3 calls each, whose
arguments are mostly numbers, as agents that record metrics, price
catalogues, plot series, draw shapes on maps or set up simulations send
them: arrays of 3 to 80 integers and floats under `minimum`/`maximum`
bounds, prices under `multipleOf: 0.01`, seat numbers under
`uniqueItems`, coordinate pairs under `prefixItems`, and constants whose
magnitudes make the serializer write an exponent (`6.02214076e+23`,
`1e-09`)."""
from .common import Shape, codes, obj


def number(**bounds):
    return {"type": "number", **bounds}


def integer(**bounds):
    return {"type": "integer", **bounds}


def array(items, least=0, most=100, **extra):
    schema = {"type": "array", "items": items, "maxItems": most}
    if least:
        schema["minItems"] = least
    schema.update(extra)
    return schema


POINT = {"type": "array", "prefixItems": [number(minimum=-90, maximum=90), number(minimum=-180, maximum=180)],
         "items": False, "minItems": 2}

TOOLS = [
    ("record_metrics", "Record a series of measurements.", obj({
        "series": {"type": "string", "pattern": "^[a-z][a-z0-9_.]*$", "maxLength": 64},
        "unit": {"type": "string", "enum": ["ms", "s", "bytes", "percent", "count"]},
        "values": array(number(minimum=-1000000, maximum=1000000), 1, 64),
        "timestamps": array(integer(minimum=1600000000000, maximum=2000000000000), 0, 64),
    }, ["series", "values"], closed=True)),
    ("set_prices", "Set the prices of products.", obj({
        "currency": {"type": "string", "enum": ["USD", "EUR", "GBP", "CHF"]},
        "prices": array(obj({
            "sku": integer(minimum=1),
            "price": number(minimum=0, multipleOf=0.01),
            "stock": integer(minimum=0, maximum=100000),
        }, ["sku", "price"], closed=True), 1, 40),
    }, ["currency", "prices"], closed=True)),
    ("plot_series", "Plot a series of points on a chart.", obj({
        "x": array(number(), 2, 50),
        "y": array(number(), 2, 50),
        "scale": number(exclusiveMinimum=0, maximum=1000),
        "step": number(minimum=0.5, multipleOf=0.5),
    }, ["x", "y"], closed=True)),
    ("draw_polygon", "Draw a polygon on the map.", obj({
        "points": array(POINT, 3, 40),
        "zoom": integer(minimum=0, maximum=22),
    }, ["points"], closed=True)),
    ("assign_seats", "Assign seats of an event to a group.", obj({
        "event_id": integer(minimum=1),
        "seats": array(integer(minimum=1, maximum=5000), 1, 100, uniqueItems=True),
    }, ["event_id", "seats"], closed=True)),
    ("set_constants", "Set the physical constants of a simulation.", obj({
        "constants": array(number(), 1, 30),
        "tolerance": number(exclusiveMinimum=0, maximum=1),
        "steps": integer(minimum=1, maximum=1000000000),
    }, ["constants", "tolerance"], closed=True)),
    ("histogram", "Store the counts of a histogram.", obj({
        "edges": array(number(), 2, 51),
        "counts": array(integer(minimum=0), 1, 50),
        "normalize": {"type": "boolean"},
    }, ["edges", "counts"], closed=True)),
]

SERIES = ["latency.p99", "cpu_load", "mem.rss_bytes", "queue.depth", "http.errors", "disk_io.read"]
# Physical constants and magnitudes a simulation is set up with; Python
# writes those far from one with an exponent.
CONSTANTS = [6.02214076e23, 1.602176634e-19, 9.1093837015e-31, 299792458.0, 6.6743e-11, 1.380649e-23,
             8.8541878128e-12, 1.25663706212e-06, 6.62607015e-34, 9.80665, 1e-09, 4.0e-05, 1.5e20]


def decimals(v, lo, hi, places):
    return round(v.r.uniform(lo, hi), v.r.randint(1, places))


def arguments(tool, v):
    if tool == "record_metrics":
        n = v.r.randint(10, 50)
        a = {"series": v.pick(SERIES), "values": [
            v.r.randint(0, 5000) if v.maybe(0.3) else decimals(v, -1000, 10000, 4) for _ in range(n)]}
        if v.maybe(0.6):
            start = v.r.randint(1700000000000, 1800000000000)
            a["timestamps"] = [start + i * v.pick([250, 1000, 60000]) for i in range(n)]
        if v.maybe(0.5):
            a["unit"] = v.pick(["ms", "s", "bytes", "percent", "count"])
        return a
    if tool == "set_prices":
        prices = []
        for _ in range(v.r.randint(3, 20)):
            p = {"sku": v.r.randint(1, 999999), "price": v.r.randint(1, 99999) / 100}
            if v.maybe(0.6):
                p["stock"] = v.r.randint(0, 5000)
            prices.append(p)
        return {"currency": v.pick(["USD", "EUR", "GBP", "CHF"]), "prices": prices}
    if tool == "plot_series":
        n = v.r.randint(8, 40)
        x0 = v.r.uniform(-100, 100)
        a = {"x": [round(x0 + i * 0.25, 2) for i in range(n)], "y": [decimals(v, -50, 50, 5) for _ in range(n)]}
        if v.maybe(0.5):
            a["scale"] = decimals(v, 0.1, 100, 2)
        if v.maybe(0.5):
            a["step"] = v.r.randint(1, 20) / 2
        return a
    if tool == "draw_polygon":
        lat, lon = v.r.uniform(-60, 60), v.r.uniform(-170, 170)
        a = {"points": [[round(lat + v.r.uniform(-0.5, 0.5), 6), round(lon + v.r.uniform(-0.5, 0.5), 6)]
                        for _ in range(v.r.randint(3, 25))]}
        if v.maybe(0.5):
            a["zoom"] = v.r.randint(3, 18)
        return a
    if tool == "assign_seats":
        return {"event_id": v.r.randint(1, 10**6), "seats": v.r.sample(range(1, 5001), v.r.randint(5, 80))}
    if tool == "set_constants":
        a = {"constants": v.r.sample(CONSTANTS, v.r.randint(3, 10)),
             "tolerance": v.pick([1e-06, 1e-09, 0.001, 5e-05, 0.01])}
        if v.maybe(0.5):
            a["steps"] = v.r.randint(100, 10**7)
        return a
    n = v.r.randint(5, 40)
    edges = sorted(decimals(v, 0, 500, 3) for _ in range(n + 1))
    a = {"edges": edges, "counts": [v.r.randint(0, 10**6) for _ in range(n)]}
    if v.maybe(0.3):
        a["normalize"] = v.maybe()
    return a


def at(key, index_of, bad):
    """A defect in the array `key`: the item `index_of(args, v)` picks is
    replaced by `bad(item, v)`; the pointer is the item's."""
    def change(args, v):
        items = args[key]
        i = index_of(items, v)
        items[i] = bad(items[i], v)
        return f"/{key}/{i}"
    return change


def anywhere(items, v):
    return v.r.randrange(len(items))


def price(bad):
    def change(args, v):
        i = v.r.randrange(len(args["prices"]))
        args["prices"][i]["price"] = bad(args["prices"][i]["price"], v)
        return f"/prices/{i}/price"
    return change


def point(slot, bad):
    def change(args, v):
        i = v.r.randrange(len(args["points"]))
        args["points"][i][slot] = bad
        return f"/points/{i}/{slot}"
    return change


def seconds_for_milliseconds(args, v):
    """One timestamp in seconds among milliseconds (the series given
    timestamps if it had none)."""
    if "timestamps" not in args:
        args["timestamps"] = [1767225600000 + i * 1000 for i in range(len(args["values"]))]
    i = v.r.randrange(len(args["timestamps"]))
    args["timestamps"][i] //= 1000
    return f"/timestamps/{i}"


def seat_twice(args, v):
    seats = args["seats"]
    seats.insert(v.r.randrange(len(seats) + 1), v.pick(seats))
    return "/seats"


def too_many(key, most):
    def change(args, v):
        items = args[key]
        while len(items) <= most:
            items.append(items[len(items) % 7])
        return f"/{key}"
    return change


def too_few(key, least):
    def change(args, v):
        del args[key][least - 1:]
        return f"/{key}"
    return change


class Numbers(Shape):
    name = "numbers"
    tools = TOOLS
    tool_weights = [22, 18, 16, 12, 12, 8, 12]
    call_counts, call_weights = [1, 2, 3], [45, 35, 20]
    kinds = codes("unknown_tool", "missing_required", "wrong_type", "out_of_range", "not_multiple",
                  "duplicate_item", "wrong_item_count", "extra_property", "malformed_arguments", "duplicate_key")
    tables = {
        "wrong_type": {
            # A number sent as a string, a float where an integer must be.
            "record_metrics": [at("values", anywhere, lambda x, v: str(x))],
            "set_prices": [price(lambda x, v: f"{x:.2f}")],
            "assign_seats": [at("seats", anywhere, lambda x, v: x + 0.5)],
            "histogram": [at("counts", anywhere, lambda x, v: str(x)), at("counts", anywhere, lambda x, v: x + 0.25)],
            "set_constants": [("steps", 1.5e6 + 0.5), ("tolerance", "1e-6")],
        },
        "out_of_range": {
            # Seconds for milliseconds, a bound passed, latitude for longitude.
            "record_metrics": [seconds_for_milliseconds,
                               at("values", anywhere, lambda x, v: v.pick([1.5e6, -2000000, 1e7]))],
            "set_prices": [price(lambda x, v: -x)],
            "draw_polygon": [point(0, 91.25), point(0, -122.4194), point(1, 181.5)],
            "assign_seats": [at("seats", anywhere, lambda x, v: v.pick([0, 5001, -3]))],
            "plot_series": [("scale", 0), ("scale", 1500.5)],
            "set_constants": [("tolerance", 0), ("tolerance", 1.5), ("steps", 0)],
        },
        "not_multiple": {
            "set_prices": [price(lambda x, v: round(x + 0.005, 3)), price(lambda x, v: x + 0.001)],
            "plot_series": [("step", 7.3), ("step", 2.25)],
        },
        "duplicate_item": {"assign_seats": [seat_twice]},
        "wrong_item_count": {
            "draw_polygon": [too_few("points", 3)],
            "plot_series": [too_few("x", 2), too_many("y", 50)],
            "record_metrics": [too_many("values", 64)],
        },
        "extra_property": {"record_metrics": [("interval_ms", 1000)], "histogram": [("bins", 20)],
                           "assign_seats": [("vip", True)], "draw_polygon": [("fill", "#ff0000")]},
    }
    unknown_names = ["record_metric", "plot", "set_price", "drawPolygon", "assign-seats"]

    def arguments(self, tool, v):
        return arguments(tool, v)
