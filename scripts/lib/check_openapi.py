"""Checks OpenAPI documents with a standard YAML parser and openapi-spec-validator; called by scripts/check-openapi.

Prints one line per problem (`docs/openapi.yaml: ...`) and, when every document is valid, `checked N documents`.
"""
import sys

import yaml
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


def main(arguments):
    paths = arguments or [DEFAULT]
    failed = False
    for path in paths:
        for problem in problems(path):
            print(f"{path}: {problem}")
            failed = True
    if failed:
        return 1
    print(f"checked {len(paths)} document{'' if len(paths) == 1 else 's'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
