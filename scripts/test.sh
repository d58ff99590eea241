#!/usr/bin/env bash
# Install the project with its test and cluster (Dask) extras into .venv (scripts/venv.sh) and run the tests.
#   bash scripts/test.sh           the full suite (what CI runs), with the 20 slowest tests listed at the end
#   bash scripts/test.sh --fast    the fast tier, for the edit-test loop: everything not marked `slow`
# Any other arguments go to pytest (e.g. bash scripts/test.sh --fast tests/core -x).
set -euo pipefail
source "$(dirname "$0")/venv.sh" "[test,cluster]"
cd "$project_root"
export QT_QPA_PLATFORM=offscreen
if [ "${1:-}" = --fast ]; then
    shift
    exec python -m pytest -m "not slow" "$@"
fi
exec python -m pytest --durations=20 "$@"
