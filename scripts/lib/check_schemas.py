"""Validates flag files against the flag file JSON Schema; called by scripts/check-schemas.

Prints one line per problem, in the loader's format (`Flags/rider.yaml: flags.x.rules[1].rollout: ...`).
"""
import glob
import json
import os
import sys

import jsonschema
import yaml

SCHEMA = "docs/schemas/flag-file.schema.json"


def field_path(error):
    text = ""
    for part in error.absolute_path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


def main(arguments):
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    validator_class = jsonschema.validators.validator_for(schema)
    if validator_class is not jsonschema.Draft202012Validator:
        print(f"{SCHEMA}: expected a draft 2020-12 schema", file=sys.stderr)
        return 1
    validator_class.check_schema(schema)
    validator = validator_class(schema)

    files = arguments or sorted(glob.glob("Flags/*.yaml"))
    if not files:
        print("no flag files to check (Flags/*.yaml)", file=sys.stderr)
        return 1
    failures = 0
    for path in files:
        shown = os.path.relpath(path) if os.path.isabs(path) and path.startswith(os.getcwd()) else path
        try:
            with open(path, encoding="utf-8") as handle:
                document = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as error:
            print(f"{shown}: {error}")
            failures += 1
            continue
        errors = sorted(validator.iter_errors(document), key=lambda e: (list(map(str, e.absolute_path)), e.message))
        for error in errors:
            location = field_path(error)
            print(f"{shown}: {location + ': ' if location else ''}{error.message}")
        failures += bool(errors)
    checked = len(files)
    print(f"checked {checked} file{'s' if checked != 1 else ''} against {SCHEMA}: "
          f"{'all valid' if not failures else f'{failures} invalid'}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
