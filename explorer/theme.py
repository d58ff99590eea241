"""Plot themes: colours, fonts and line widths shared by every panel.

A Theme is plain data (hex colours, point sizes, pixel widths); `Panel.apply_theme(theme)`
restyles a panel's existing plots from it. Two base themes, dark (the default, for screens
and projectors in dark rooms) and light (print-ready: white paper, dark ink), each with a
presentation variant that scales fonts and line widths for the back row of a lecture hall:

    theme = THEMES["light"]
    big = presentation(theme)          # same colours, fonts and lines × PRESENTATION_SCALE
    panel.apply_theme(big)

The series palette is Okabe & Ito's colour-blind-safe set (2008), reordered per background
so the first colours have the most contrast (no yellow early on white, no dark blue early on black).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

PRESENTATION_SCALE = 1.6

# Okabe-Ito (https://jfly.uni-koeln.de/color/)
ORANGE, SKY_BLUE, GREEN, YELLOW = "#E69F00", "#56B4E9", "#009E73", "#F0E442"
BLUE, VERMILLION, PURPLE = "#0072B2", "#D55E00", "#CC79A7"


@dataclass(frozen=True)
class Theme:
    name: str                      # "light" or "dark"
    background: str                # plot and panel background
    foreground: str                # axes, ticks, labels, text
    muted: str                     # secondary ink: reference lines, greyed markers, captions
    grid_alpha: float              # 0..1 opacity of the grid lines
    palette: tuple[str, ...]       # series colours, in order of use (colour-blind safe)
    alert: str                     # clipped / infinite / diverged markers
    font_size: float               # base point size of tick labels, legends and notes
    line_width: float              # base pen width in pixels for data curves
    presentation: bool = False     # scale fonts and line widths by PRESENTATION_SCALE
    sequential_cmap: str = "inferno"   # magnitudes (log10 ‖∂L/∂h_t‖): dark = vanished, bright = flare
    diverging_cmap: str = "CET-D1"     # signed values centred on 0 (hidden state, cell state)
    unit_cmap: str = "viridis"         # values in [0, 1] (gates)

    @property
    def scale(self) -> float:
        return PRESENTATION_SCALE if self.presentation else 1.0

    @property
    def font_pt(self) -> float:
        """Point size of tick labels, legend entries, notes and captions."""
        return round(self.font_size * self.scale, 1)

    @property
    def label_pt(self) -> float:
        """Point size of axis titles (a little larger than the ticks)."""
        return round(self.font_size * 1.1 * self.scale, 1)

    @property
    def pen_width(self) -> float:
        """Pixel width of data curves."""
        return self.line_width * self.scale

    @property
    def marker_size(self) -> float:
        """Pixel size of scatter markers."""
        return 7.0 * self.scale

    def color(self, index: int) -> str:
        """The index-th series colour (cycling)."""
        return self.palette[index % len(self.palette)]


DARK = Theme(
    name="dark",
    background="#14171c",
    foreground="#e6e6e6",
    muted="#9aa0a6",
    grid_alpha=0.18,
    palette=(SKY_BLUE, ORANGE, GREEN, PURPLE, YELLOW, VERMILLION, BLUE),
    alert=VERMILLION,
    font_size=10.0,
    line_width=2.0,
)

LIGHT = Theme(
    name="light",
    background="#ffffff",
    foreground="#1a1a1a",
    muted="#6b6b6b",
    grid_alpha=0.25,
    palette=(BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY_BLUE, YELLOW),
    alert=VERMILLION,
    font_size=10.0,
    line_width=2.0,
)

THEMES: dict[str, Theme] = {"dark": DARK, "light": LIGHT}
DEFAULT_THEME = DARK


def presentation(theme: Theme, on: bool = True) -> Theme:
    """The same theme with fonts and line widths scaled for projection (or back to normal)."""
    return replace(theme, presentation=on)


def get_theme(name: str, presentation_mode: bool = False) -> Theme:
    """THEMES[name], optionally in its presentation variant; ValueError names the choices."""
    if name not in THEMES:
        raise ValueError(f"theme must be one of {', '.join(THEMES)}, got {name!r}")
    return presentation(THEMES[name], presentation_mode)
