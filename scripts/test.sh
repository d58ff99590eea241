#!/usr/bin/env bash
# Install the project with its test and cluster (Dask) extras into .venv (scripts/venv.sh) and run the tests,
# spread by pytest-xdist (-n auto: one worker more than the cores, at most 4; tests/conftest.py says why). A worker
# that crashes ends the run naming its test: xdist 3.8 replacing it under --dist loadgroup can hang (its #1378).
#   bash scripts/test.sh           the full suite (what CI runs), with the 20 slowest tests listed at the end
#   bash scripts/test.sh --fast    the fast tier, for the edit-test loop: the engine, API, CLI and model-level
#                                  app tests (everything not marked `slow` or `window`)
# Any other arguments go to pytest (e.g. bash scripts/test.sh --fast tests/core -x; -n 0 runs in one process).
set -euo pipefail
source "$(dirname "$0")/venv.sh" "[test,cluster]"
cd "$project_root"
export QT_QPA_PLATFORM=offscreen
spread=(-n auto --dist loadgroup --max-worker-restart=0)
if [ "${1:-}" = --fast ]; then
    shift
    exec python -m pytest "${spread[@]}" -m "not slow and not window" "$@"
fi
exec python -m pytest "${spread[@]}" --durations=20 "$@"
