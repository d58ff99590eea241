"""Qt's offscreen platform with a screen of a given size, for the layout tests, the gallery, the scenario watch and
the GUI benchmark: the screen's size is fixed when the application starts, so a process is started with it."""
from __future__ import annotations

import json
from pathlib import Path


def offscreen_platform(directory: str | Path, width: int, height: int) -> str:
    """Write a width × height screen description into `directory`; returns the QT_QPA_PLATFORM value using it."""
    config = Path(directory) / f"screen_{width}x{height}.json"
    config.write_text(json.dumps({"screens": [{"name": "screen", "x": 0, "y": 0, "width": width, "height": height,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    return f"offscreen:configfile={config}"
