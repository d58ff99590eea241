#!/usr/bin/env bash
# Install the project with its test extras (CPU-only torch) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
export QT_QPA_PLATFORM=offscreen
python3 -m pytest tests
