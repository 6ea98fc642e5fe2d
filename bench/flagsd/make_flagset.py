#!/usr/bin/env python3
"""Prints a flag set document (JSON, basis points) whose snapshot is about --size bytes, or of --switches switches.

Plugin points of eight switches each, a group kill switch per point, city and cohort rules and partial rollouts:
the shape of a real app's namespace, grown to the size wanted.
"""
import argparse
import json

CITIES = ["lagos", "paris", "nairobi", "berlin", "lisbon", "sao_paulo", "london", "mumbai"]


def flag_set(namespace: str, switches: int) -> dict:
    points, kills, flags = [], {"master": {"description": "Every optional plugin."}}, {}
    for p in range(0, switches, 8):
        point = f"point_{p // 8:03d}"
        keys = [f"plugin_switch_{point}_{i}" for i in range(min(8, switches - p))]
        kills[f"kill_{point}"] = {"description": f"Every plugin of {point}."}
        points.append({"name": point, "kill_switch": f"kill_{point}", "switches": keys,
                       "description": f"Plugin point {point} of the benchmark app."})
        for n, key in enumerate(keys):
            flags[key] = {
                "type": "plugin_switch",
                "description": f"Benchmark plugin {key}, owned by team {n}.",
                "owner": f"team-{n}",
                "rules": [
                    {"name": "qa allowlist", "units": [f"qa-{n}-1", f"qa-{n}-2"], "rollout": 10000},
                    {"name": "city ramp", "cities": CITIES[n % 4: n % 4 + 3], "cohorts": ["beta"], "rollout": 1250 * (n + 1)},
                ],
                "rollout": 500 * n,
            }
    return {"namespace": namespace, "description": "Benchmark namespace", "plugin_points": points,
            "kill_switches": kills, "flags": flags}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--namespace", default="bench")
    parser.add_argument("--size", type=int, default=50_000, help="approximate snapshot size in bytes")
    parser.add_argument("--switches", type=int, help="this many plugin switches instead (of about 230 bytes each)")
    args = parser.parse_args()
    if args.switches:
        print(json.dumps(flag_set(args.namespace, args.switches), separators=(",", ":")))
        return
    switches = 8
    while len(json.dumps(flag_set(args.namespace, switches), separators=(",", ":"))) < args.size:
        switches += 8
    print(json.dumps(flag_set(args.namespace, switches), separators=(",", ":")))


if __name__ == "__main__":
    main()
