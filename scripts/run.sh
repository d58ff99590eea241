#!/usr/bin/env bash
# Install the project into .venv (CPU-only torch) and open the app on its built-in default scenario.
set -euo pipefail
source "$(dirname "$0")/venv.sh" ""
exec gradflow "$@"
