#!/usr/bin/env python3
"""Turns bench/results/ (written by bench/run-core.sh) into the tables of bench/README.md."""
import re
import statistics
import sys
from pathlib import Path

UNITS = {"ns": 1e-9, "us": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
COUNTS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}


def parse_benchmarks(text):
    """{benchmark name: {metric: p50 in seconds or as a count}} from ordo-one/benchmark's text output."""
    results, name = {}, None
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if index + 1 < len(lines) and lines[index + 1].startswith("╒") and not line.startswith(("│", "╞", "├", "╘")):
            name = line.strip()
            results[name] = {}
            continue
        if name is None or not line.startswith("│") or "Metric" in line:
            continue
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        label, values = cells[0], cells[1:]
        if len(values) < 3:
            continue
        p50 = float(values[2])
        unit = re.search(r"\((ns|us|μs|ms|s)\)", label)
        count = re.search(r"\((K|M|G)\)", label)
        if label.startswith("Time (wall clock)"):
            results[name]["wall"] = p50 * UNITS[unit.group(1)] if unit else p50
        elif label.startswith("Malloc (total)"):
            results[name]["mallocs"] = p50 * (COUNTS[count.group(1)] if count else 1)
    return results


def main():
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
    bench = parse_benchmarks((folder / "benchmark.txt").read_text())
    instructions = {}
    if (folder / "instructions.tsv").exists():
        for line in (folder / "instructions.tsv").read_text().splitlines():
            case, value = line.split("\t")
            instructions[case] = float(value)

    def ns(name):
        return bench[name]["wall"] * 1e9

    dictionary = ns("reference: [String: Bool] lookup")
    model = {"plain": ns("reference: model evaluator, plain"), "targeted": ns("reference: model evaluator, targeted")}
    goals = {"plain": 20, "targeted": 100}

    print((folder / "machine.txt").read_text().strip())
    print()
    print("| evaluation on a 1,000-flag snapshot | ns (p50) | instructions | vs `[String: Bool]` | vs model evaluator | goal |")
    print("|---|---:|---:|---:|---:|---|")
    rows = [
        ("isEnabled, plain switch", "isEnabled plain switch (handle)", "isEnabled-plain", "plain"),
        ("evaluate, plain switch", "evaluate plain switch (handle)", "plain", "plain"),
        ("isEnabled, targeted switch", "isEnabled targeted switch (handle)", "isEnabled-targeted", "targeted"),
        ("evaluate, targeted switch", "evaluate targeted switch (handle)", "targeted", "targeted"),
        ("evaluate, experiment (3 variants)", "evaluate experiment (handle)", "experiment", None),
        ("reference: `[String: Bool]` lookup by key", "reference: [String: Bool] lookup", "dictionary", None),
        ("reference: model evaluator, plain", "reference: model evaluator, plain", "model-plain", None),
        ("reference: model evaluator, targeted", "reference: model evaluator, targeted", "model-targeted", None),
        ("prepare an evaluator for a context (once)", "prepare evaluator for a context", "prepare", None),
    ]
    for label, name, case, kind in rows:
        value = ns(name)
        instr = f"{instructions[case]:.0f}" if case in instructions else "–"
        versus_dictionary = f"{value / dictionary:.2f}×" if kind else ""
        versus_model = f"{value / model[kind]:.2f}×" if kind else ""
        goal = ""
        if kind:
            goal = f"< {goals[kind]} ns: {'met' if value < goals[kind] else 'NOT met'}"
        print(f"| {label} | {value:.0f} | {instr} | {versus_dictionary} | {versus_model} | {goal} |")
    print()
    print("| allocations | mallocs per 1,000,000 evaluations (p50) | goal |")
    print("|---|---:|---|")
    for kind in ("plain", "targeted", "experiment"):
        mallocs = bench[f"allocations per 1,000,000 evaluations, {kind}"]["mallocs"]
        print(f"| {kind} | {mallocs:.0f} | 0: {'met' if mallocs == 0 else 'NOT met'} |")
    prepare = bench["prepare evaluator for a context"].get("mallocs")
    if prepare is not None:
        print(f"| preparing an evaluator (once per context) | {prepare:.0f} per preparation | |")
    print()
    print("| decode + compile (bytes built beforehand) | ms (p50) | instructions | mallocs (p50) |")
    print("|---|---:|---:|---:|")
    for count in ("1000", "10000"):
        entry = bench[f"decode + compile {count} flags"]
        instr = instructions.get(f"decode-{count}")
        shown = f"{instr / 1e6:,.0f} M" if instr else "–"
        print(f"| {int(count):,} flags | {entry['wall'] * 1e3:.0f} | {shown} | {entry['mallocs']:,.0f} |")
    cpu = {}
    for name in ("decode-1000", "decode-10000", "delta-10000"):
        path = folder / f"{name}.txt"
        if path.exists():
            values = [float(match) for match in re.findall(r"([0-9.]+) ms CPU", path.read_text())]
            if name == "delta-10000":
                # The digest of the first snapshot, then per line the delta's CPU and the full decode + compile's
                # (the reference, in the same run).
                cpu["delta"] = values[1::2]
                cpu["delta-reference"] = values[2::2]
            else:
                cpu[name] = values
    if cpu:
        print()
        print("| thread CPU time (median of the runs) | ms | instructions | goal |")
        print("|---|---:|---:|---|")
        for name, label, goal in (("decode-1000", "decode + compile, 1,000 flags", 10), ("decode-10000", "decode + compile, 10,000 flags", 100),
                                  ("delta", "apply a one-flag delta, 10,000 flags", 1),
                                  ("delta-reference", "reference: full decode + compile of each version, same run", None)):
            if name in cpu and cpu[name]:
                value = statistics.median(cpu[name])
                instr = instructions.get(name if name != "delta" else "delta-10000")
                shown = f"{instr / 1e6:,.1f} M" if instr else "–"
                verdict = "" if goal is None else f"< {goal} ms: {'met' if value < goal else 'NOT met'}"
                print(f"| {label} | {value:.2f} | {shown} | {verdict} |")


if __name__ == "__main__":
    main()
