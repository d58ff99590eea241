"""The app's Qt look for a theme: the style sheet (resources/styles/<theme>.qss) and a Fusion palette."""
from __future__ import annotations

from pathlib import Path
from string import Template

from PySide6.QtGui import QColor, QPalette

from explorer.theme import Theme

STYLES = Path(__file__).resolve().parents[2] / "resources" / "styles"


def stylesheet(theme: Theme) -> str:
    """resources/styles/<theme>.qss with $font_pt (and the theme's colours) filled in."""
    path = STYLES / f"{theme.name}.qss"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    values = {name: getattr(theme, name) for name in ("background", "foreground", "muted", "alert")}
    values.update(font_pt=theme.font_pt, big_pt=round(theme.font_pt * 1.3, 1), small_pt=round(theme.font_pt * 0.9, 1),
                  caption_pt=round(theme.font_pt * (0.9 if theme.presentation else 1.0), 1))
    return Template(text).safe_substitute(values)


def palette_for(theme: Theme) -> QPalette:
    """A Fusion palette in the theme's colours (widgets the stylesheet does not restyle follow it)."""
    dark = theme.name == "dark"
    window = QColor("#1b1f24" if dark else "#f4f5f7")
    base = QColor("#101317" if dark else "#ffffff")
    text = QColor(theme.foreground)
    button = QColor("#262b32" if dark else "#eceef1")
    pal = QPalette()
    for role, colour in ((QPalette.ColorRole.Window, window), (QPalette.ColorRole.WindowText, text),
                         (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase, window),
                         (QPalette.ColorRole.Text, text), (QPalette.ColorRole.Button, button),
                         (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.ToolTipBase, base),
                         (QPalette.ColorRole.ToolTipText, text), (QPalette.ColorRole.PlaceholderText,
                                                                 QColor(theme.muted)),
                         (QPalette.ColorRole.Highlight, QColor("#2f81f7" if dark else "#0969da")),
                         (QPalette.ColorRole.HighlightedText, QColor("#ffffff"))):
        pal.setColor(role, colour)
    disabled = QColor("#60666e" if dark else "#a0a4a8")
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return pal


def compare_stylesheet(theme: Theme, surface: str) -> str:
    """A comparison window of its own (no main window's style sheet reaches it): the theme's colours,
    `surface` (a shade off the background) for the toolbar."""
    return (f"QMainWindow#CompareWindow, QWidget#compareCentral {{ background: {theme.background}; "
            f"color: {theme.foreground}; }}"
            f"QToolBar {{ background: {surface}; border: none; padding: 3px; spacing: 4px; }}"
            f"QToolBar QToolButton {{ color: {theme.foreground}; background: transparent; "
            f"border: none; border-radius: 4px; padding: 4px 8px; }}"
            f"QToolBar QToolButton:hover {{ background: {theme.muted}; }}"
            f"QToolBar QLabel {{ color: {theme.muted}; }}")
