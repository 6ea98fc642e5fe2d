"""Checks OpenAPI documents with a standard YAML parser and openapi-spec-validator, and JSON bodies against the
document's schemas with openapi-schema-validator (OpenAPI 3.1); called by scripts/check-openapi.

Prints one line per problem (`docs/openapi.yaml: ...`, `body.json: Committed: ...`) and, when all is valid,
`checked N documents` (and `checked N bodies`).
"""
import json
import sys

import yaml
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

DEFAULT = "docs/openapi.yaml"


def problems(path):
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except OSError as error:
        return [f"cannot read: {error.strerror}"]
    except yaml.YAMLError as error:
        return [f"not valid YAML: {' '.join(str(error).split())}"]
    if not isinstance(document, dict) or not str(document.get("openapi", "")).startswith("3.1"):
        return ["not an OpenAPI 3.1 document (no `openapi: 3.1.x` at the top)"]
    try:
        validate(document)
    except OpenAPIValidationError as error:
        where = "/".join(str(part) for part in error.path) or "(document)"
        return [f"{where}: {error.message}"]
    return []


def body_problems(document, schema_name, path):
    """Problems of the JSON body in `path` against `#/components/schemas/<schema_name>` of the document."""
    if schema_name not in document.get("components", {}).get("schemas", {}):
        return [f"{schema_name}: the document has no schema of that name"]
    try:
        with open(path, encoding="utf-8") as handle:
            body = json.load(handle)
    except (OSError, ValueError) as error:
        return [f"cannot read the body: {error}"]
    # The whole document as the root, so `#/components/...` references resolve.
    root = dict(document)
    root["$ref"] = f"#/components/schemas/{schema_name}"
    return [f"{schema_name}: {'/'.join(str(part) for part in error.absolute_path) or '(body)'}: {error.message}"
            for error in OAS31Validator(root).iter_errors(body)]


def main(arguments):
    paths = []
    bodies = []
    while arguments:
        if arguments[0] == "--body" and len(arguments) >= 3:
            bodies.append((arguments[1], arguments[2]))
            arguments = arguments[3:]
        else:
            paths.append(arguments[0])
            arguments = arguments[1:]
    paths = paths or [DEFAULT]
    failed = False
    for path in paths:
        for problem in problems(path):
            print(f"{path}: {problem}")
            failed = True
    if bodies:
        with open(paths[0], encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
        for schema_name, path in bodies:
            for problem in body_problems(document, schema_name, path):
                print(f"{path}: {problem}")
                failed = True
    if failed:
        return 1
    print(f"checked {len(paths)} document{'' if len(paths) == 1 else 's'}")
    if bodies:
        print(f"checked {len(bodies)} bod{'y' if len(bodies) == 1 else 'ies'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
