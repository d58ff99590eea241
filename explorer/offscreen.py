"""Qt's offscreen platform with a screen of a given size, for the layout tests, the gallery, the scenario watch and
the GUI benchmark: the screen's size is fixed when the application starts, so a process is started with it."""
from __future__ import annotations

import json
from pathlib import Path


def offscreen_platform(directory: str | Path, width: int, height: int, beside: tuple[int, int] | None = None) -> str:
    """Write a width × height screen description into `directory` (and a second screen of size `beside` to its
    right, where given); returns the QT_QPA_PLATFORM value using it."""
    sizes = [(width, height)] + ([beside] if beside else [])
    screens = [{"name": f"screen{i}", "x": sum(w for w, _ in sizes[:i]), "y": 0, "width": w, "height": h,
                "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1} for i, (w, h) in enumerate(sizes)]
    config = Path(directory) / ("screens_" + "_".join(f"{w}x{h}" for w, h in sizes) + ".json")
    config.write_text(json.dumps({"screens": screens}))
    return f"offscreen:configfile={config}"
