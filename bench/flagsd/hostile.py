#!/usr/bin/env python3
"""Issue 29's attacks against a running flagsd behind a "proxy" (the load client: flagsd trusts 127.0.0.1, and each
simulated address is an X-Forwarded-For value), for bench/hostile-clients.sh:

starve   one address posts junk batches ({"events": [0, 0, ...]}) as fast as flagsd answers, on C connections, while
         H honest apps, each at an address of its own, post a batch of 20 valid sessions every I seconds. Prints the
         attacker's requests and statuses, and how many honest batches were counted (200) and refused (429).
cohorts  A addresses post sessions (or exposures) naming 32 random cohorts each, at each address's full event rate,
         for S seconds. Prints what was posted and answered; the shell counts the rows flagsd wrote.

Prints one JSON object. Needs uvloop (the venv bench/flagsd-common.sh makes).
"""
import argparse
import asyncio
import json
import os
import sys
import time
import uuid

import uvloop

sys.path.insert(0, os.path.dirname(__file__))
from guard import Connection, session  # noqa: E402

NAMESPACE = "hostile"
SWITCHES = ["plugin_switch_hostile_a", "plugin_switch_hostile_b"]
EXPERIMENT = "hostile_experiment"


async def setup(host, port, admin_token, namespace_policy):
    admin = Connection(host, port, admin_token)
    flags = {key: {"type": "plugin_switch", "rollout": 10000} for key in SWITCHES}
    flags[EXPERIMENT] = {"type": "experiment", "value_type": "string", "default_variant": "a", "weights": {"a": 1, "b": 1},
                         "variants": [{"key": "a", "value": "A"}, {"key": "b", "value": "B"}]}
    flag_set = {"crash_guard": namespace_policy, "plugin_points": [{"name": "point", "switches": SWITCHES}], "flags": flags,
                "kill_switches": {}}
    body = json.dumps({"name": NAMESPACE, "reason_policy": "never", "flag_set": flag_set}).encode()
    status, _, data = await admin.request("POST", "/v1/namespaces", body)
    if status not in (200, 201, 409):  # 409: made by an earlier run against this flagsd
        raise SystemExit(f"creating the namespace: {status} {data[:300]!r}")
    body = json.dumps({"name": f"hostile-{uuid.uuid4().hex[:8]}", "role": "client", "namespaces": [NAMESPACE]}).encode()
    status, _, data = await admin.request("POST", "/v1/tokens", body)
    if status not in (200, 201):
        raise SystemExit(f"creating a client token: {status} {data[:300]!r}")
    admin.close()
    return json.loads(data)["token"]


async def starve(args, token):
    path = f"/v1/namespaces/{NAMESPACE}/events"
    junk = json.dumps({"events": [0] * args.junk}).encode()
    deadline = time.monotonic() + args.seconds
    attack = {"requests": 0, "statuses": {}}
    honest = {"batches": 0, "statuses": {}}

    async def attacker():
        connection = Connection(args.host, args.port, token)
        while time.monotonic() < deadline:
            status, _, _ = await connection.request("POST", path, junk, [("X-Forwarded-For", "203.0.113.66")])
            attack["requests"] += 1
            attack["statuses"][str(status)] = attack["statuses"].get(str(status), 0) + 1
        connection.close()

    async def app(index):
        connection = Connection(args.host, args.port, token)
        while time.monotonic() < deadline:
            events = [session(False, [SWITCHES[index % 2]], "lagos") for _ in range(20)]
            status, _, _ = await connection.request("POST", path, json.dumps({"events": events}).encode(),
                                                    [("X-Forwarded-For", f"198.51.100.{index + 1}")])
            honest["batches"] += 1
            honest["statuses"][str(status)] = honest["statuses"].get(str(status), 0) + 1
            await asyncio.sleep(args.interval)
        connection.close()

    started = time.monotonic()
    await asyncio.gather(*[attacker() for _ in range(args.connections)], *[app(index) for index in range(args.apps)])
    elapsed = time.monotonic() - started
    return {"seconds": round(elapsed, 1), "junk_per_batch": args.junk, "attacker": attack,
            "attacker_requests_per_second": round(attack["requests"] / elapsed), "honest": honest,
            "honest_counted": honest["statuses"].get("200", 0)}


async def cohorts(args, token):
    path = f"/v1/namespaces/{NAMESPACE}/events"
    deadline = time.monotonic() + args.seconds
    posted = {"events": 0, "statuses": {}}

    def event(index):
        made_up = [f"c-{uuid.uuid4().hex[:10]}" for _ in range(32)]
        if args.kind == "exposures":
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1)) + ".000Z"
            return {"id": uuid.uuid4().hex, "type": "exposure", "time": stamp, "cohorts": made_up, "unit": uuid.uuid4().hex,
                    "flag": EXPERIMENT, "variant": "a"}
        item = session(False, [SWITCHES[index % 2]], "lagos")
        item["cohorts"] = made_up
        return item

    async def sender(address):
        connection = Connection(args.host, args.port, token)
        while time.monotonic() < deadline:
            batch = [event(index) for index in range(args.batch)]
            status, _, data = await connection.request("POST", path, json.dumps({"events": batch}).encode(),
                                                       [("X-Forwarded-For", address)])
            posted["events"] += len(batch)
            posted["statuses"][str(status)] = posted["statuses"].get(str(status), 0) + 1
            if status == 429:
                await asyncio.sleep(1)
        connection.close()

    started = time.monotonic()
    await asyncio.gather(*[sender(f"198.18.{index}.1") for index in range(args.addresses)])
    return {"seconds": round(time.monotonic() - started, 1), "kind": args.kind, "addresses": args.addresses, "posted": posted}


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["starve", "cohorts"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--connections", type=int, default=4, help="starve: the attacker's connections")
    parser.add_argument("--junk", type=int, default=1000, help="starve: junk elements per batch")
    parser.add_argument("--apps", type=int, default=10, help="starve: honest apps, an address each")
    parser.add_argument("--interval", type=float, default=0.5, help="starve: seconds between an app's batches")
    parser.add_argument("--addresses", type=int, default=1, help="cohorts: sending addresses")
    parser.add_argument("--batch", type=int, default=100, help="cohorts: events per batch")
    parser.add_argument("--kind", choices=["sessions", "exposures"], default="sessions")
    args = parser.parse_args()
    # Undeclared cities and cohorts, ranked per window (the default); the caps per unit and address as built in.
    token = await setup(args.host, args.port, args.admin_token, {"max_scope_values": 100})
    result = await starve(args, token) if args.mode == "starve" else await cohorts(args, token)
    print(json.dumps(result))


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(main())
