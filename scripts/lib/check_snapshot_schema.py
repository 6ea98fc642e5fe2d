"""Validates snapshot documents; called by scripts/check-snapshot-schema.

For each document: the JSON Schema (docs/schemas/snapshot.schema.json), then the checksum, recomputed with the
canonical form of docs/snapshot.md written out here independently of the Swift encoder. Prints one line per
problem (`FILE: field.path: message`) and a summary on standard error. With --digests first, also prints each
document's digest (docs/snapshot.md, "The digest") as `FILE: digest sha256:…`.
"""
import hashlib
import json
import math
import os
import re
import sys

import jsonschema

SCHEMA = "docs/schemas/snapshot.schema.json"
DOCUMENTATION = "docs/snapshot.md"


def double_text(value: float) -> str:
    """A double in shortest round-trip digits: decimal notation for 0.0001 <= |value| <= 2^53, else exponent
    notation (Swift's Double.description, which the Swift encoder writes)."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = repr(value)
    if 1e-4 <= abs(value) <= 2.0**53 or "e" in text:
        return text
    # Python writes 2^53 < |value| < 1e16 in decimal notation: the same digits in exponent notation.
    sign, whole = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole = whole.split(".")[0]
    digits = whole.rstrip("0")
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e+{len(whole) - 1:02d}"


def canonical(value) -> bytes:
    """The canonical form of docs/snapshot.md: sorted members, no whitespace, minimal escapes."""
    if value is None:
        return b"null"
    if value is True:
        return b"true"
    if value is False:
        return b"false"
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return str(value).encode()
        value = float(value)  # an integer literal outside 64 bits is read as a double
    if isinstance(value, float):
        return double_text(value).encode()
    if isinstance(value, str):
        out = bytearray(b'"')
        for byte in value.encode("utf-8"):
            if byte == 0x22:
                out += b'\\"'
            elif byte == 0x5C:
                out += b"\\\\"
            elif byte == 0x0A:
                out += b"\\n"
            elif byte == 0x0D:
                out += b"\\r"
            elif byte == 0x09:
                out += b"\\t"
            elif byte < 0x20:
                out += b"\\u%04x" % byte
            else:
                out.append(byte)
        return bytes(out + b'"')
    if isinstance(value, list):
        return b"[" + b",".join(canonical(element) for element in value) + b"]"
    members = sorted(value.items(), key=lambda member: member[0].encode("utf-8"))
    return b"{" + b",".join(canonical(key) + b":" + canonical(member) for key, member in members) + b"}"


def digest(tree) -> str:
    """The digest of docs/snapshot.md: per-object leaves summed modulo 2^256, hashed after the header."""
    def leaf(data: bytes) -> int:
        return int.from_bytes(hashlib.sha256(data).digest(), "big")

    def member(key, value) -> bytes:
        return canonical(key) + b":" + canonical(value)

    mask = 2**256 - 1
    flags = sum(leaf(member(k, v)) for k, v in tree.get("flags", {}).items()) & mask
    kills = sum(leaf(member(k, v)) for k, v in tree.get("kill_switches", {}).items()) & mask
    points = sum(leaf(str(i).encode() + b":" + canonical(p)) for i, p in enumerate(tree.get("plugin_points", []))) & mask
    header = {k: v for k, v in tree.items() if k not in ("checksum", "flags", "kill_switches", "plugin_points")}
    total = canonical(header) + flags.to_bytes(32, "big") + kills.to_bytes(32, "big") + points.to_bytes(32, "big")
    return "sha256:" + hashlib.sha256(total).hexdigest()


def reject_duplicates(pairs):
    names = [name for name, _ in pairs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"duplicate member {duplicates[0]!r}")
    return dict(pairs)


def field_path(error):
    text = ""
    for part in error.absolute_path:
        text += f"[{part}]" if isinstance(part, int) else ("." if text else "") + str(part)
    return text


def documentation_example():
    with open(DOCUMENTATION, encoding="utf-8") as handle:
        text = handle.read()
    example = text.split("## Example", 1)[-1]
    match = re.search(r"```json\n(.*?)\n```", example, re.S)
    if not match:
        raise ValueError(f"{DOCUMENTATION}: no ```json block under '## Example'")
    return match.group(1).encode("utf-8")


def check(name, raw, validator):
    problems = []
    try:
        document = json.loads(raw, object_pairs_hook=reject_duplicates)
    except ValueError as error:
        return [f"{name}: not a JSON document: {error}"]
    for error in sorted(validator.iter_errors(document), key=lambda e: (list(map(str, e.absolute_path)), e.message)):
        location = field_path(error)
        problems.append(f"{name}: {location + ': ' if location else ''}{error.message}")
    if isinstance(document, dict) and isinstance(document.get("checksum"), str):
        claimed = document.pop("checksum")
        computed = "sha256:" + hashlib.sha256(canonical(document)).hexdigest()
        if claimed != computed:
            problems.append(f"{name}: checksum: {claimed} does not match the canonical form ({computed})")
    return problems


def main(arguments):
    print_digests = arguments[:1] == ["--digests"]
    arguments = arguments[1:] if print_digests else arguments
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    validator_class = jsonschema.validators.validator_for(schema)
    if validator_class is not jsonschema.Draft202012Validator:
        print(f"{SCHEMA}: expected a draft 2020-12 schema", file=sys.stderr)
        return 1
    validator_class.check_schema(schema)
    validator = validator_class(schema)

    documents = []
    if arguments:
        for path in arguments:
            shown = os.path.relpath(path) if path.startswith(os.getcwd()) else path
            try:
                with open(path, "rb") as handle:
                    documents.append((shown, handle.read()))
            except OSError as error:
                print(f"{shown}: {error}")
                return 1
    else:
        documents.append((f"{DOCUMENTATION} (example)", documentation_example()))

    failures = 0
    for name, raw in documents:
        problems = check(name, raw, validator)
        for problem in problems:
            print(problem)
        failures += bool(problems)
        if print_digests and not problems:
            print(f"{name}: digest {digest(json.loads(raw))}")
    count = len(documents)
    print(f"checked {count} snapshot{'s' if count != 1 else ''} against {SCHEMA} and their checksums: "
          f"{'all valid' if not failures else f'{failures} invalid'}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
