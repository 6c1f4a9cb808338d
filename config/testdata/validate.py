"""Validates configs against agent.schema.json with Python's jsonschema (a validator
turnlog did not write). Reads a JSON list of {"name", "instance"} or {"name", "file"}
(a YAML file, read by PyYAML) on stdin; writes a JSON list of {"name", "valid",
"errors"} to stdout."""
import json
import sys

import jsonschema
import yaml

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
out = []
for case in json.load(sys.stdin):
    if "file" in case:
        with open(case["file"]) as f:
            instance = yaml.safe_load(f)
    else:
        instance = case["instance"]
    errors = sorted("/".join(str(p) for p in e.absolute_path) + ": " + e.message for e in validator.iter_errors(instance))
    out.append({"name": case["name"], "valid": not errors, "errors": errors})
json.dump(out, sys.stdout)
