#!/usr/bin/env bash
# Writes docs/config.md's reference again from config/agent.schema.json (turnlog config
# reference), between its two marker lines; the rest of the file is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
ref=$(mktemp)
trap 'rm -f "$ref" "$ref.md"' EXIT
go run . config reference > "$ref"
awk -v ref="$ref" '
  /^<!-- The reference below is written by/ { print; while ((getline line < ref) > 0) print line; skip = 1; next }
  /^<!-- End of the reference. -->/ { skip = 0 }
  !skip { print }
' docs/config.md > "$ref.md"
mv "$ref.md" docs/config.md
