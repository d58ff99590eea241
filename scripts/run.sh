#!/usr/bin/env bash
# Install the project (CPU-only torch) and open the app on its built-in default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e .
# Optional: the compiled LSTM loops (about 30 s once, then cached); without a compiler the app runs as well.
python3 -m core.native build || echo "(the optional compiled LSTM loops were not built; the app runs without them)"
exec gradflow "$@"
