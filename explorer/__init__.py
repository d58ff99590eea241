"""The desktop app (PySide6 + pyqtgraph). Training logic lives in `core`; this package only shows it."""
