#!/usr/bin/env bash
# Install the project into .venv (scripts/venv.sh) and open the app on its built-in default scenario.
set -euo pipefail
source "$(dirname "$0")/venv.sh" ""
exec gradflow "$@"
