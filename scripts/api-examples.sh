#!/usr/bin/env bash
# Runs every curl example of docs/api.md, in order, against a running turnlog
# (`make run` in another shell, or TURNLOG_URL=http://host:port). Exits non-zero at the
# first example that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
script=$(awk '/^```sh$/ {on=1; next} /^```$/ {on=0} on' docs/api.md)
bash -euo pipefail -c "$script"
echo "every docs/api.md example ran green"
