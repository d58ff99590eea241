import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # Qt aborts without a display
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHARED = Path(__file__).resolve().parents[2] / "shared"
