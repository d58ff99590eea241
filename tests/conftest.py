import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # Qt aborts without a display
# The Python LSTM loops everywhere (the same on every machine, and no background build into the user's cache);
# the compiled ones are built and checked explicitly (tests/core/compiled_lstm.py).
os.environ.setdefault("GRADFLOW_NATIVE", "0")

SHARED = Path(__file__).resolve().parents[2] / "shared"
