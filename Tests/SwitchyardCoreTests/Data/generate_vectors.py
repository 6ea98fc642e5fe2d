#!/usr/bin/env python3
"""Generates the hashing vectors and the hash-dependent facts of the evaluation cases, independently of Swift.

Run from anywhere:

    python3 Tests/SwitchyardCoreTests/Data/generate_vectors.py          # rewrite the data files
    python3 Tests/SwitchyardCoreTests/Data/generate_vectors.py --check  # only report what would change

It needs `mmh3` from PyPI. When `import mmh3` fails, the script makes its own virtual environment under
`$TMPDIR/switchyard-vectors-venv`, installs mmh3 there with pip, and runs itself again inside it.

What it writes (every number comes from Python: mmh3 for murmur3, hashlib for SHA-256, and the formulas of
PRODUCT.md written out again below, never from the Swift code under test):

- vectors/murmur3.json   murmur3_x86_32 of byte strings: every length 0...16 (every tail length), empty
                         input, non-ASCII text (accents, both Unicode normal forms, CJK, emoji, zero-width
                         joiner sequences), non-UTF-8 bytes, other seeds, random longer inputs.
- vectors/buckets.json   bucket = (h * 10000) >> 32 of flagKey + unitId, for many flag keys and unit ids.
- vectors/variants.json  the weighted variant pick: the first variant whose cumulative weight is strictly
                         above (h * W) >> 32.
- vectors/sha256.json    SHA-256 of inputs around every padding boundary.
- evaluation/rollout-boundaries.json  a whole evaluation file: for each rollout r, a unit whose bucket is
                         exactly r - 1 (on) and one whose bucket is exactly r (off), found by search.
- evaluation/*.json      (the hand-written files) only their hash-dependent fields: for every case whose
                         decision needs a bucket (a partial rollout, or weights shared by several variants)
                         and whose context has a (non-empty) unit id, `expected.bucket`, and the `value` and `variant`
                         that follow from it. Everything else in those files is written by hand.
"""

import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile

try:
    import mmh3
except ImportError:  # Make a private venv with mmh3 and run again inside it.
    if os.environ.get("SWITCHYARD_VECTORS_VENV"):
        sys.exit("mmh3 is still missing inside the venv; install it with 'pip install mmh3'")
    venv = os.path.join(tempfile.gettempdir(), "switchyard-vectors-venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call([python, "-m", "pip", "install", "--quiet", "mmh3"])
    os.environ["SWITCHYARD_VECTORS_VENV"] = venv
    os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK_ONLY = "--check" in sys.argv[1:]
changed = []


# --- The formulas of PRODUCT.md, written out again ------------------------------------------------------------

def murmur3(data: bytes, seed: int = 0) -> int:
    """murmur3_x86_32, unsigned."""
    return mmh3.hash(data, seed, signed=False)


def unit_hash(flag_key: str, unit_id: str) -> int:
    """The hash of a unit for a flag: the UTF-8 bytes of flagKey + unitId, no separator, no normalisation."""
    return murmur3((flag_key + unit_id).encode("utf-8"), 0)


def bucket_of(h: int) -> int:
    """bucket = (UInt64(h) * 10000) >> 32, in 0...9999."""
    return (h * 10000) >> 32


def weight_point(h: int, total: int) -> int:
    """The point in 0..<W that picks a variant: (UInt64(h) * W) >> 32."""
    return (h * total) >> 32


def pick_variant(h: int, weights: list) -> int:
    """Index of the first variant whose cumulative weight is strictly above the point. weights: [(key, w)]."""
    total = sum(w for _, w in weights)
    point = weight_point(h, total)
    cumulative = 0
    for index, (_, weight) in enumerate(weights):
        cumulative += weight
        if cumulative > point:
            return index
    raise AssertionError("no variant picked")


# --- Writing ---------------------------------------------------------------------------------------------------

def dump(document) -> str:
    """Two-space indented JSON; short values and each element of a `cases` or `vectors` list on one line."""
    def render(value, indent, key=None):
        pad = "  " * indent
        inline = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        if len(pad) + len(inline) <= 110 and key not in ("cases", "vectors", "flag_set"):
            return inline
        if isinstance(value, dict) and value:
            members = [f'{pad}  {json.dumps(k, ensure_ascii=False)}: {render(v, indent + 1, k)}' for k, v in value.items()]
            return "{\n" + ",\n".join(members) + "\n" + pad + "}"
        if isinstance(value, list) and value and (key in ("cases", "vectors")):
            lines = [pad + "  " + json.dumps(item, ensure_ascii=False, separators=(", ", ": ")) for item in value]
            return "[\n" + ",\n".join(lines) + "\n" + pad + "]"
        if isinstance(value, list) and value and any(isinstance(item, (dict, list)) for item in value):
            lines = [pad + "  " + render(item, indent + 1) for item in value]
            return "[\n" + ",\n".join(lines) + "\n" + pad + "]"
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return render(document, 0) + "\n"


def write(relative_path: str, document) -> None:
    path = os.path.join(HERE, relative_path)
    text = dump(document)
    old = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            old = handle.read()
    if old == text:
        return
    changed.append(relative_path)
    if not CHECK_ONLY:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


# --- murmur3 vectors -------------------------------------------------------------------------------------------

def murmur3_vectors():
    rng = random.Random(20261122)
    inputs = []  # (note, bytes, seed)
    alphabet = b"abcdefghijklmnopq"
    for length in range(0, 17):
        inputs.append((f"length {length}", alphabet[:length], 0))
    for length in range(0, 17):
        inputs.append((f"length {length}, bytes 0xFF (non-UTF-8)", b"\xff" * length, 0))
    texts = [
        ("empty string", ""),
        ("one space", " "),
        ("a flag key and a unit id", "plugin_switch_feed_promosrider-42"),
        ("accent, composed (NFC)", "caf\u00e9"),
        ("accent, decomposed (NFD): different bytes, different hash", "cafe\u0301"),
        ("German city", "Z\u00fcrich"),
        ("CJK", "\u6771\u4eac"),
        ("CJK city and unit", "plugin_switch_map_layers\u5317\u4eac-\u4e58\u5ba2-7"),
        ("Arabic", "\u0627\u0644\u0642\u0627\u0647\u0631\u0629"),
        ("emoji (4-byte UTF-8)", "\U0001F695"),
        ("family emoji with zero-width joiners", "\U0001F469\u200d\U0001F469\u200d\U0001F467"),
        ("flag emoji (regional indicators)", "\U0001F1F3\U0001F1EC"),
        ("combining characters stacked", "a\u0301\u0302\u0303"),
        ("Hangul syllable vs jamo", "\ud55c"),
        ("Hangul jamo", "\u1112\u1161\u11ab"),
        ("NUL byte inside", "a\u0000b"),
        ("the classic fox", "The quick brown fox jumps over the lazy dog"),
    ]
    for note, text in texts:
        inputs.append((note, text.encode("utf-8"), 0))
    for seed in (1, 42, 0x9747B28C, 0xFFFFFFFF):
        inputs.append((f"seed {seed}", b"plugin_switch_feed_promos", seed))
        inputs.append((f"seed {seed}, empty", b"", seed))
    for index in range(24):
        length = rng.randrange(17, 200)
        inputs.append((f"random {index}", bytes(rng.randrange(256) for _ in range(length)), 0))

    vectors = []
    for note, data, seed in inputs:
        entry = {"note": note, "hex": data.hex()}
        try:
            entry["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        entry["seed"] = seed
        entry["hash"] = murmur3(data, seed)
        vectors.append(entry)
    write("vectors/murmur3.json", {
        "description": "murmur3_x86_32 (unsigned) of byte strings, from Python's mmh3: "
                       "mmh3.hash(bytes.fromhex(hex), seed, signed=False). `text` is the UTF-8 decoding when "
                       "the bytes are valid UTF-8.",
        "vectors": vectors,
    })


# --- bucket and variant vectors --------------------------------------------------------------------------------

FLAG_KEYS = ["plugin_switch_feed_promos", "plugin_switch_surge_banner", "checkout_button_color", "a", "",
             "plugin_switch_caf\u00e9", "\u5b9f\u9a13"]

UNIT_IDS = ["", "0", "1", "rider-42", "rider-43", "user@example.com", "550e8400-e29b-41d4-a716-446655440000",
            "caf\u00e9", "cafe\u0301", "\u4e58\u5ba2-\u5317\u4eac-7", "\U0001F695\U0001F695", "a\u0000b",
            "very-long-unit-id-" + "x" * 100]


def bucket_vectors():
    rng = random.Random(7)
    vectors = []
    for flag_key in FLAG_KEYS:
        for unit_id in UNIT_IDS:
            h = unit_hash(flag_key, unit_id)
            vectors.append({"flag_key": flag_key, "unit_id": unit_id, "hash": h, "bucket": bucket_of(h)})
    for _ in range(200):
        unit_id = f"unit-{rng.getrandbits(48):012x}"
        h = unit_hash("plugin_switch_feed_promos", unit_id)
        vectors.append({"flag_key": "plugin_switch_feed_promos", "unit_id": unit_id, "hash": h, "bucket": bucket_of(h)})
    # The extremes of the formula: hashes 0 and 2^32 - 1 cannot be chosen, so check the arithmetic directly.
    formula = [{"hash": h, "bucket": bucket_of(h)} for h in
               (0, 1, 429496, 429497, 2**31 - 1, 2**31, 2**32 - 429497, 2**32 - 429496, 2**32 - 1)]
    write("vectors/buckets.json", {
        "description": "Buckets: h = murmur3_x86_32(utf8(flag_key + unit_id), seed 0); bucket = (h * 10000) >> 32. "
                       "`formula` checks the arithmetic at its edges without a hash.",
        "formula": formula,
        "vectors": vectors,
    })

    weight_sets = [
        [["control", 1], ["treatment", 1]],
        [["a", 1], ["b", 2], ["c", 7]],
        [["off", 9999], ["on", 1]],
        [["first", 0], ["second", 5], ["third", 0], ["fourth", 5]],
        [["x", 1000000], ["y", 1000000], ["z", 1]],
        [["green", 34], ["blue", 33], ["red", 33]],
    ]
    variants = []
    for weights in weight_sets:
        total = sum(w for _, w in weights)
        for index in range(40):
            unit_id = UNIT_IDS[index] if index < len(UNIT_IDS) else f"unit-{rng.getrandbits(40):010x}"
            flag_key = "checkout_button_color"
            h = unit_hash(flag_key, unit_id)
            chosen = pick_variant(h, weights)
            variants.append({"flag_key": flag_key, "unit_id": unit_id, "weights": weights, "hash": h,
                             "point": weight_point(h, total), "variant": weights[chosen][0]})
    write("vectors/variants.json", {
        "description": "Weighted variant picks: h as for buckets; W = sum of weights; point = (h * W) >> 32; "
                       "the variant is the first whose cumulative weight (in the listed order) is strictly "
                       "above point.",
        "vectors": variants,
    })


# --- SHA-256 vectors -------------------------------------------------------------------------------------------

def sha256_vectors():
    rng = random.Random(256)
    inputs = [("empty", b""), ("abc", b"abc"),
              ("FIPS 180-2 two-block message", b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              ("non-ASCII text", "Z\u00fcrich \u6771\u4eac \U0001F695".encode("utf-8"))]
    for length in (1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000):
        inputs.append((f"{length} bytes", bytes(rng.randrange(256) for _ in range(length))))
    inputs.append(("a million 'a'", b"a" * 1_000_000))
    vectors = []
    for note, data in inputs:
        entry = {"note": note}
        if len(data) > 4096:
            entry["repeat"] = {"byte_hex": data[:1].hex(), "count": len(data)}
        else:
            entry["hex"] = data.hex()
        entry["sha256"] = hashlib.sha256(data).hexdigest()
        vectors.append(entry)
    write("vectors/sha256.json", {
        "description": "SHA-256 from Python's hashlib. An input is `hex`, or `repeat`: one byte repeated `count` times.",
        "vectors": vectors,
    })


# --- Evaluation: rollout boundaries (generated whole) ----------------------------------------------------------

def find_unit(flag_key: str, wanted_bucket: int, prefix: str) -> str:
    """The first unit id `prefix-N` whose bucket for the flag is exactly `wanted_bucket`."""
    n = 0
    while True:
        unit_id = f"{prefix}-{n}"
        if bucket_of(unit_hash(flag_key, unit_id)) == wanted_bucket:
            return unit_id
        n += 1


def rollout_boundaries():
    flags = {}
    cases = []
    partial = [1, 2, 7, 110, 1234, 3333, 5000, 9900, 9999]
    for rollout in [0, 10000] + partial:
        key = f"plugin_switch_rollout_{rollout}"
        flags[key] = {"type": "plugin_switch", "rollout": rollout}
        if rollout in (0, 10000):
            for unit_id in ("rider-0", find_unit(key, 0, "edge"), find_unit(key, 9999, "edge")):
                on = rollout == 10000
                cases.append({
                    "description": f"a default rollout of {rollout} needs no bucket: "
                                   f"{'on' if on else 'off'} for every unit, STATIC",
                    "flag": key, "context": {"unit_id": unit_id},
                    "expected": {"value": on, "variant": "on" if on else "off", "reason": "STATIC",
                                 "error_code": None, "decision": {"step": "fallback"}, "bucket": None}})
            continue
        for bucket, on in ((rollout - 1, True), (rollout, False)):
            unit_id = find_unit(key, bucket, "rider")
            cases.append({
                "description": f"rollout {rollout}: the unit in bucket {bucket} is {'on' if on else 'off'} "
                               f"(on exactly when bucket < rollout)",
                "flag": key, "context": {"unit_id": unit_id},
                "expected": {"value": on, "variant": "on" if on else "off", "reason": "SPLIT", "error_code": None,
                             "decision": {"step": "fallback"}, "bucket": bucket}})
    # The same boundary decided by a rule's rollout instead of the default.
    key = "plugin_switch_rule_rollout_2500"
    flags[key] = {"type": "plugin_switch",
                  "rules": [{"cities": ["lagos"], "rollout": 2500}], "rollout": 10000}
    for bucket, on in ((2499, True), (2500, False)):
        unit_id = find_unit(key, bucket, "rider")
        cases.append({
            "description": f"a rule at 2500 in lagos: the unit in bucket {bucket} is {'on' if on else 'off'}, "
                          f"and the default of 10000 does not rescue it",
            "flag": key, "context": {"unit_id": unit_id, "city": "lagos"},
            "expected": {"value": on, "variant": "on" if on else "off", "reason": "SPLIT", "error_code": None,
                         "decision": {"step": "rule", "index": 0}, "bucket": bucket}})
    write("evaluation/rollout-boundaries.json", {
        "description": "Rollout boundaries, generated by generate_vectors.py: for each rollout r, the unit whose "
                       "bucket is r - 1 is on and the unit whose bucket is r is off; 0 and 10000 need no bucket.",
        "flag_set": {"namespace": "boundaries", "flags": flags},
        "cases": cases,
    })


# --- Evaluation: fill in the hash-dependent fields of the hand-written files -----------------------------------

def fill_evaluation_file(relative_path: str) -> None:
    path = os.path.join(HERE, relative_path)
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    flags = document["flag_set"].get("flags", {})
    for case in document["cases"]:
        expected = case["expected"]
        flag = flags.get(case["flag"])
        unit_id = case.get("context", {}).get("unit_id")
        decision = expected.get("decision", {})
        if flag is None or not unit_id or decision.get("step") not in ("rule", "fallback"):
            continue
        if case.get("ask", "flag") == "switch" and flag.get("type") == "experiment":
            continue
        source = flag["rules"][decision["index"]] if decision["step"] == "rule" else flag
        h = unit_hash(case["flag"], unit_id)
        if flag.get("type", "plugin_switch") == "plugin_switch":
            rollout = source.get("rollout", 0)
            if rollout in (0, 10000):
                continue
            if expected["reason"] != "SPLIT":
                sys.exit(f"{relative_path}: case '{case['description']}' needs a bucket, so its reason must be SPLIT")
            expected["bucket"] = bucket_of(h)
            expected["value"] = bucket_of(h) < rollout
            expected["variant"] = "on" if expected["value"] else "off"
        else:
            order = [variant["key"] for variant in flag["variants"]]
            weights = [(key, source["weights"].get(key, 0)) for key in order]
            if sum(1 for _, w in weights if w > 0) <= 1:
                continue
            if expected["reason"] != "SPLIT":
                sys.exit(f"{relative_path}: case '{case['description']}' picks among weights, so its reason must be SPLIT")
            chosen = flag["variants"][pick_variant(h, weights)]
            expected["bucket"] = bucket_of(h)
            expected["variant"] = chosen["key"]
            expected["value"] = chosen["value"]
    write(relative_path, document)


def main():
    murmur3_vectors()
    bucket_vectors()
    sha256_vectors()
    rollout_boundaries()
    folder = os.path.join(HERE, "evaluation")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json") and name != "rollout-boundaries.json":
            fill_evaluation_file(os.path.join("evaluation", name))
    if CHECK_ONLY:
        if changed:
            sys.exit("out of date: " + ", ".join(changed))
        print("all data files are up to date")
    else:
        print("updated: " + (", ".join(changed) if changed else "nothing (already up to date)"))


if __name__ == "__main__":
    main()
