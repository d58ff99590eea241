#!/usr/bin/env bash
# Install the project with its test and cluster (Dask) extras into .venv (scripts/venv.sh) and run the whole test suite.
set -euo pipefail
source "$(dirname "$0")/venv.sh" "[test,cluster]"
cd "$project_root"
export QT_QPA_PLATFORM=offscreen
python -m pytest tests "$@"
