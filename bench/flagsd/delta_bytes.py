#!/usr/bin/env python3
"""Bytes a client downloads for a one-flag change: the full snapshot (what a client that does not ask for deltas
gets) and the delta (what one that asks gets), identity and gzip, on one namespace. Prints one JSON object.
"""
import argparse
import http.client
import json


def get(connection, path, headers):
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = response.read()
    return response.status, dict(response.getheaders()), body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--flag", default="plugin_switch_point_000_1")
    args = parser.parse_args()

    connection = http.client.HTTPConnection("127.0.0.1", args.port)
    auth = {"Authorization": f"Bearer {args.token}"}
    path = f"/v1/namespaces/{args.namespace}/snapshot"
    _, headers, before = get(connection, path, auth)
    etag = headers["ETag"]
    body = json.dumps({"rollout": 4321, "reason": "delta bytes benchmark"})
    connection.request("POST", f"/v1/namespaces/{args.namespace}/flags/{args.flag}/rollout", body=body,
                       headers={**auth, "Content-Type": "application/json"})
    change = connection.getresponse()
    change.read()
    if change.status != 200:
        raise SystemExit(f"the change failed: {change.status}")

    sizes = {"namespace": args.namespace, "snapshot_bytes_before": len(before)}
    for label, extra in [("full", {}), ("delta", {"Accept": "application/vnd.switchyard.snapshot-delta+json, application/json"})]:
        for encoding in ["identity", "gzip"]:
            request = {**auth, "If-None-Match": etag, "Accept-Encoding": encoding, **extra}
            status, headers, answer = get(connection, path, request)
            if status != 200:
                raise SystemExit(f"{label} {encoding}: status {status}")
            kind = headers.get("Content-Type", "")
            if (label == "delta") != kind.startswith("application/vnd.switchyard.snapshot-delta+json"):
                raise SystemExit(f"{label} {encoding}: got {kind}")
            sizes[f"{label}_{encoding}_bytes"] = len(answer)
    print(json.dumps(sizes))


if __name__ == "__main__":
    main()
