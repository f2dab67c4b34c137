#!/usr/bin/env python3
"""Where the check of one payload spends its instructions, per workload
shape, toolgate beside the naive pipeline: from callgrind runs of
examples/check_workload over each shape's workload with 1 round (loading
and one check of every payload, which compiles what is compiled on first
use) and with 2 (one check more), whose difference is the check alone in
its steady state. bench/profile_check.sh makes the runs.

usage: callgrind_split.py DIR SHAPE...
DIR holds <shape>/stats.json and <shape>.<toolgate|naive>.<0|1>.cg (one
round, and one more).

toolgate's columns are inclusive costs of its stages (a stage whose
function is renamed or inlined shows as 0):
  envelope  detect::detect_to_judge less the two below: reading the
            payload's document, finding the calls, freeing the document
  args      detect::collect::Collector::arguments and
            detect::tape::Tape::{read_quoted,read_object}: the arguments of
            each call read onto a tape (unescaped, keys checked unique), from
            a string's text, or straight from the string or the object as
            the envelope is read
  depth     detect::limits::too_deep: the nesting bound's bracket scan
  schema    policy::schema::ArgumentSchema::{passes,passes_tape,failures}:
            jsonschema
  verdict   Policy::check_with less the above: names, other checks, the
            verdict
  drop      the rest of the loop: dropping the verdict
Each pipeline's whole is the difference of the program's totals.
The naive pipeline's: validate (jsonschema's Validator::is_valid,
inclusive), drop (freeing the values: drop_in_place, free, dealloc, self
costs) and parse (the rest: the body and the arguments parsed)."""
import json
import os
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*?):(.*?)(?: \[(.*)\])?$")
FREEING = ("free", "_int_free", "__rustc::__rust_dealloc", "__rustc::__rdl_dealloc", "malloc_consolidate")


def costs(path, inclusive):
    """Instructions per function of one callgrind file."""
    args = ["callgrind_annotate", "--auto=no", "--threshold=100", os.path.abspath(path)]
    if inclusive:
        args.insert(1, "--inclusive=yes")
    # From /, every object file is named (from a checkout, those inside it
    # are not).
    out = subprocess.run(args, capture_output=True, text=True, check=True, cwd="/").stdout
    found, table = {}, False
    for line in out.splitlines():
        if "file:function" in line:
            table = True
            continue
        m = LINE.match(line)
        # Inclusive costs: real symbols only (their object file is named);
        # self costs: every line, inlined code counted to its symbol.
        if "PROGRAM TOTALS" in line:
            found["PROGRAM TOTALS"] = int(line.split()[0].replace(",", ""))
        if table and m and (not inclusive or m.group(4)):
            found[m.group(3)] = found.get(m.group(3), 0) + int(m.group(1).replace(",", ""))
    return found


def per_payload(directory, shape, pipeline, inclusive, payloads):
    before = costs(os.path.join(directory, f"{shape}.{pipeline}.0.cg"), inclusive)
    after = costs(os.path.join(directory, f"{shape}.{pipeline}.1.cg"), inclusive)
    return {k: (after.get(k, 0) - before.get(k, 0)) / payloads for k in set(after) | set(before)}


def main():
    directory, shapes = sys.argv[1], sys.argv[2:]
    print(f"{'shape':10} {'toolgate':>9} {'envelope':>8} {'args':>5} {'depth':>5} {'schema':>6} "
          f"{'verdict':>7} {'drop':>5} | {'naive':>9} {'parse':>5} {'validate':>8} {'drop':>5} | "
          f"naive/toolgate")
    for shape in shapes:
        payloads = json.load(open(os.path.join(directory, shape, "stats.json")))["payloads"]
        t = per_payload(directory, shape, "toolgate", True, payloads)
        n = per_payload(directory, shape, "naive", True, payloads)
        n_self = per_payload(directory, shape, "naive", False, payloads)
        # The whole program's difference: a function's inclusive cost
        # counts code inlined into it from recursive callers twice.
        total = t.get("PROGRAM TOTALS", 0)
        check = t.get("toolgate::check::<impl toolgate::policy::Policy>::check_with", 0)
        detect = (t.get("toolgate::detect::detect_to_judge", 0)
                  or t.get("toolgate::detect::detect_with", 0))
        args = (t.get("toolgate::detect::collect::Collector::arguments", 0)
                + t.get("toolgate::detect::tape::Tape::read_quoted", 0)
                + t.get("toolgate::detect::tape::Tape::read_object", 0))
        depth = t.get("toolgate::detect::limits::too_deep", 0)
        schema = (t.get("toolgate::policy::schema::ArgumentSchema::passes", 0)
                  + t.get("toolgate::policy::schema::ArgumentSchema::passes_tape", 0)
                  + t.get("toolgate::policy::schema::ArgumentSchema::failures", 0))
        naive = n.get("PROGRAM TOTALS", 0)
        validate = n.get("jsonschema::validator::Validator<F>::is_valid", 0)
        freeing = sum(v for k, v in n_self.items() if "drop_in_place" in k or k in FREEING)
        share = lambda part, whole: f"{100 * part / whole:.0f}%" if whole else "-"
        print(f"{shape:10} {total / 1e3:8.1f}k {share(detect - args - depth, total):>8} "
              f"{share(args, total):>5} {share(depth, total):>5} {share(schema, total):>6} "
              f"{share(check - detect - schema, total):>7} {share(total - check, total):>5} | "
              f"{naive / 1e3:8.1f}k {share(naive - validate - freeing, naive):>5} "
              f"{share(validate, naive):>8} {share(freeing, naive):>5} | {naive / total:.2f}")
    print("instructions a payload (callgrind Ir), the check alone; shares of each pipeline's own")


if __name__ == "__main__":
    main()
