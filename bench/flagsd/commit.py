#!/usr/bin/env python3
"""Change commit latency through the API: sequential rollout changes on one keep-alive connection; each is
acknowledged only once durable. Prints one JSON object with p50 / p99 / max in milliseconds."""
import argparse
import base64
import http.client
import json
import random
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--namespace", default="bench")
    parser.add_argument("--token", required=True)
    parser.add_argument("--changes", type=int, default=2000)
    parser.add_argument("--flag", default="plugin_switch_point_000_2", help="the plugin switch whose rollout changes")
    parser.add_argument("--spread-points", type=int, default=0, metavar="N",
                        help="change switch 2 of a random plugin point of the N that make_flagset.py writes "
                             "(point_000 ... ) instead of --flag: changes spread over the whole document (seeded)")
    parser.add_argument("--etcd", action="store_true",
                        help="PUT a key through etcd's HTTP gateway instead (the anchor: a durable one-key commit)")
    args = parser.parse_args()
    connection = http.client.HTTPConnection(args.host, args.port)
    headers = {"Content-Type": "application/json"}
    if not args.etcd:  # etcd refuses a token it did not issue
        headers["Authorization"] = f"Bearer {args.token}"
    latencies = []
    spread = random.Random(33)
    for n in range(args.changes + 50):
        flag = args.flag
        if args.spread_points:
            flag = f"plugin_switch_point_{spread.randrange(args.spread_points):03d}_2"
        if args.etcd:
            path = "/v3/kv/put"
            body = json.dumps({"key": base64.b64encode(f"/flags/{flag}".encode()).decode(),
                               "value": base64.b64encode(json.dumps({"rollout": n % 10001}).encode()).decode()})
        else:
            path = f"/v1/namespaces/{args.namespace}/flags/{flag}/rollout"
            body = json.dumps({"rollout": n % 10001})
        start = time.perf_counter()
        connection.request("POST", path, body, headers)
        response = connection.getresponse()
        response.read()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status != 200:
            raise SystemExit(f"change {n} failed with {response.status}")
        if n >= 50:  # warm-up
            latencies.append(elapsed)
    latencies.sort()
    print(json.dumps({
        "changes": len(latencies), "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(latencies[int(0.99 * (len(latencies) - 1))], 2), "max_ms": round(latencies[-1], 2),
        "changes_per_s": round(len(latencies) / (sum(latencies) / 1000), 0),
    }))


if __name__ == "__main__":
    main()
