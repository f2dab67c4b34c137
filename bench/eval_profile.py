#!/usr/bin/env python3
"""Shares of a `toolgate eval` run's samples (bench/profile_eval.sh), each
sample given to the first part, in this order, that one of its frames
names:

  check: detect   toolgate::detect::detect_to_judge (bytes to calls)
  check: judge    Policy::judge_expecting (calls to a verdict)
  verdict drop    Tally::verdict: counting the verdict and freeing it
  + tally
  row search      the rest of Evaluator::line: finding "output" and
                  "policy" in a line, reading a dataset row
  batch           the rest of Batch::check (--out lines, test cases)
  read            LineReader::fill and the run's head: read(2) from the
                  page cache, the XXH3 fingerprint, cutting lines
  start-up        the policy read and compiled, arguments, the loader
  fold            the fold: tallies added, batches handed back, waits
  outputs         the summary printed and written
  other           the rest: threads started and ended, the kernel's
                  scheduling, and stacks perf could not unwind

usage: eval_profile.py STACKS   (the output of `perf script -F tid,ip,sym`)"""
import collections
import sys

PARTS = [
    ("check: detect", ("toolgate::detect::detect_to_judge", "toolgate::detect::detect_with")),
    ("check: judge", ("judge_expecting",)),
    ("verdict drop + tally", ("Tally::verdict",)),
    ("row search", ("Evaluator::line",)),
    ("batch", ("Batch::check",)),
    ("read", ("LineReader", "Fingerprinted", "read_head")),
    ("start-up", ("eval::evaluator", "Policy::from", "clap_builder", "_dl_", "Evaluator::new")),
    ("fold", ("pipeline::Fold", "Shared<F>::take", "Shared<F>::fill", "give_back", "Aggregate")),
    ("outputs", ("write_outputs", "text::render", "report::html")),
]


def samples(path):
    """Each sample's frames, leaf first."""
    frames = []
    for line in open(path, errors="replace"):
        if not line.strip():
            if frames:
                yield frames
            frames = []
        elif line[0] == "\t":
            frames.append(line.strip())
        else:
            frames = []
    if frames:
        yield frames


def main():
    counts = collections.Counter()
    for frames in samples(sys.argv[1]):
        text = "\n".join(frames)
        part = next((name for name, keys in PARTS if any(k in text for k in keys)), "other")
        counts[part] += 1
    total = sum(counts.values())
    if not total:
        sys.exit("no samples")
    print(f"{total} samples")
    for name, _ in PARTS + [("other", ())]:
        print(f"  {name:22} {100 * counts[name] / total:5.1f}%")
    check = counts["check: detect"] + counts["check: judge"]
    print(f"  {'around the check':22} {100 * (total - check) / total:5.1f}%")


if __name__ == "__main__":
    main()
