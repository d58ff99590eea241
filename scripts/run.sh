#!/usr/bin/env bash
# Install the project (CPU-only torch) and open the app on its built-in default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e .
exec gradflow "$@"
