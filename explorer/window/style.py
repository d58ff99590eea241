"""The app's Qt look for a theme: the style sheet (the template resources/styles/app.qss filled in with the
theme's colours from explorer.theme) and a Fusion palette."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from string import Template

from gradflow.explorer.theme import Theme
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication, QWidget

STYLE_TEMPLATE = Path(__file__).resolve().parents[2] / "resources" / "styles" / "app.qss"


def stylesheet(theme: Theme) -> str:
    """resources/styles/app.qss with the theme's ink, chrome colours and type sizes filled in."""
    try:
        text = STYLE_TEMPLATE.read_text(encoding="utf-8")
    except OSError:
        return ""
    values = dict(asdict(theme.chrome), foreground=theme.foreground, muted=theme.muted,
                  font_pt=theme.font_pt, big_pt=round(theme.font_pt * 1.3, 1), small_pt=round(theme.font_pt * 0.9, 1),
                  caption_pt=round(theme.font_pt * (0.9 if theme.presentation else 1.0), 1))
    return Template(text).safe_substitute(values)


def palette_for(theme: Theme) -> QPalette:
    """A Fusion palette in the theme's colours (widgets the stylesheet does not restyle follow it)."""
    chrome = theme.chrome
    window, base, text = QColor(chrome.window), QColor(chrome.base), QColor(theme.foreground)
    pal = QPalette()
    for role, colour in ((QPalette.ColorRole.Window, window), (QPalette.ColorRole.WindowText, text),
                         (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase, window),
                         (QPalette.ColorRole.Text, text), (QPalette.ColorRole.Button, QColor(chrome.button)),
                         (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.ToolTipBase, base),
                         (QPalette.ColorRole.ToolTipText, text), (QPalette.ColorRole.PlaceholderText,
                                                                 QColor(theme.muted)),
                         (QPalette.ColorRole.Highlight, QColor(chrome.highlight)),
                         (QPalette.ColorRole.HighlightedText, QColor("#ffffff")),
                         # links (the banner's step references) in the banner title's ink: readable on it
                         (QPalette.ColorRole.Link, QColor(chrome.banner_title)),
                         (QPalette.ColorRole.LinkVisited, QColor(chrome.banner_title))):
        pal.setColor(role, colour)
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor(chrome.disabled))
    return pal


def compare_stylesheet(theme: Theme) -> str:
    """A comparison window of its own (no main window's style sheet reaches it): the app's style sheet (its
    messages, the tour's stops), the theme's background, the panels' control colour for the toolbar."""
    return stylesheet(theme) + (
        f"QMainWindow#CompareWindow, QWidget#compareCentral {{ background: {theme.background}; "
        f"color: {theme.foreground}; }}"
        f"QToolBar {{ background: {theme.chrome.control}; border: none; padding: 3px; spacing: 4px; }}"
        f"QToolBar QToolButton {{ color: {theme.foreground}; background: transparent; "
        f"border: none; border-radius: 4px; padding: 4px 8px; }}"
        f"QToolBar QToolButton:hover {{ background: {theme.muted}; }}"
        f"QToolBar QLabel {{ color: {theme.muted}; }}")


def apply_to_app(window: QWidget, theme: Theme):
    """`theme`'s base type size and palette on the app, its style sheet on `window`."""
    app = QApplication.instance()
    font = QFont(app.font())
    font.setPointSizeF(theme.font_pt)   # the base size of every widget without a font of its own
    app.setFont(font)                   # new windows and dialogs; it reaches widgets that exist ...
    window.setFont(font)                # ... only once the event loop runs: this window's, now
    app.setPalette(palette_for(theme))  # on the app: a window palette does not reach styled children
    window.setStyleSheet(stylesheet(theme))
