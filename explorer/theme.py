"""Plot themes: colours, fonts and line widths shared by every panel.

A Theme is plain data (hex colours, point sizes, pixel widths); `Panel.apply_theme(theme)`
restyles a panel's existing plots from it. Two base themes, dark (the default, for screens
and projectors in dark rooms) and light (print-ready: white paper, dark ink), each with a
presentation variant that scales fonts and line widths for the back row of a lecture hall:

    theme = THEMES["light"]
    big = presentation(theme)          # same colours, fonts and lines × PRESENTATION_SCALE
    panel.apply_theme(big)

The series palette is Okabe & Ito's colour-blind-safe set (2008), reordered per background so the first colours
have the most contrast; on white each hue is darkened (CIECAM02 lightness J lowered, hue and chroma kept) until it
meets WCAG 2.1's 4.5:1 for text, on the dark background its blue is lightened likewise.

Every quantity the panels draw (‖∂L/∂h_t‖, ‖∂L/∂c_t‖, h, c, each gate, each theory line) has one style everywhere,
QUANTITIES[name]: an ink (a role each theme colours, Inks) and a dash pattern, so that it is told apart without its
colour too; `theme.quantity(name)` gives its colour, dash and width in this theme (plotting.quantity_pen draws it).
tests/explorer/test_quantity_styles.py checks the quantities drawn together against deuteranopia and protanopia and
every ink against the background for contrast.

This module is the one home of every colour the app paints: the plots' (Theme) and the window chrome's
(Chrome: toolbars, docks, banner, message bar, settings fields), which fill the style sheet template
resources/styles/app.qss and the Qt palette (explorer.window.style).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

PRESENTATION_SCALE = 1.6

# Okabe-Ito (https://jfly.uni-koeln.de/color/)
ORANGE, SKY_BLUE, GREEN, YELLOW = "#E69F00", "#56B4E9", "#009E73", "#F0E442"
BLUE, VERMILLION, PURPLE = "#0072B2", "#D55E00", "#CC79A7"
LIGHT_BLUE = "#2D87C8"                       # BLUE lightened to 4.6:1 on the dark background
# on white (LIGHT): the hues darkened to 4.6:1, BLUE as it is (5.2:1)
DARK_SKY_BLUE, DARK_ORANGE, DARK_GREEN, DARK_YELLOW = "#007DB0", "#A46700", "#00855C", "#817500"
DARK_VERMILLION, DARK_PURPLE = "#C35100", "#A95B88"
LIVE_MARK_COLOR = "#3fb950"   # the settings' mark of a key that applies at the next step (reads on both themes)


@dataclass(frozen=True)
class Chrome:
    """The window's colours around the plots (names are the $placeholders of resources/styles/app.qss)."""
    window: str              # main window and loading overlay background
    bar: str                 # toolbar, status bar, menus
    border: str              # separators, group boxes, menu and tooltip frames
    hover: str               # a hovered toolbar button or menu-bar item
    title_bar: str           # dock title bars
    title_hover: str         # a hovered dock title-bar button
    control: str             # combo boxes and buttons inside panels
    base: str                # text fields, tooltips
    button: str              # Qt palette buttons
    disabled: str            # disabled text
    dim_text: str            # the loading overlay's text
    banner: str              # scenario banner: background, border, title, text
    banner_border: str
    banner_title: str
    banner_text: str
    message_text: str        # message bar text; its kinds: background and left edge
    error_bg: str
    error_edge: str
    warning_bg: str
    warning_edge: str
    info_bg: str
    info_edge: str
    group_title: str         # settings group titles
    pending: str             # a changed setting waiting for Apply
    field_error: str         # a refused setting: its message, field border and background
    invalid_bg: str
    accent: str              # the pending Apply button, a selected menu item
    accent_border: str
    highlight: str           # Qt palette selection


DARK_CHROME = Chrome(
    window="#1b1f24", bar="#22272e", border="#30363d", hover="#30363d", title_bar="#262c34", title_hover="#3a414b",
    control="#1e232a", base="#101317", button="#262b32", disabled="#60666e", dim_text="#9aa0a6",
    banner="#16263a", banner_border="#2f4a6d", banner_title="#cfe3ff", banner_text="#dbe4ee",
    message_text="#ffffff", error_bg="#4a1717", error_edge="#ff5c5c", warning_bg="#45350f", warning_edge="#e3b341",
    info_bg="#1d2b22", info_edge="#3fb950", group_title="#8fbfff", pending="#e3b341", field_error="#ff6b6b",
    invalid_bg="#3a1c1c", accent="#1f6feb", accent_border="#388bfd", highlight="#2f81f7",
)

LIGHT_CHROME = Chrome(
    window="#f4f5f7", bar="#ffffff", border="#d0d7de", hover="#eaeef2", title_bar="#e8ebef", title_hover="#d0d7de",
    control="#f1f1f1", base="#ffffff", button="#eceef1", disabled="#a0a4a8", dim_text="#57606a",
    banner="#ddf4ff", banner_border="#9cd0f5", banner_title="#0a3069", banner_text="#1f2328",
    message_text="#1f2328", error_bg="#ffebe9", error_edge="#cf222e", warning_bg="#fff8c5", warning_edge="#bf8700",
    info_bg="#dafbe1", info_edge="#1a7f37", group_title="#0550ae", pending="#9a6700", field_error="#cf222e",
    invalid_bg="#ffebe9", accent="#0969da", accent_border="#0550ae", highlight="#0969da",
)


@dataclass(frozen=True)
class Inks:
    """The colours of the quantities' roles (Quantity.ink), in one theme."""
    h: str           # the hidden state, its gradient ‖∂L/∂h_t‖ and the product ‖∂s_T/∂s_t‖ that carries it back
    c: str           # the LSTM's cell state and ‖∂L/∂c_t‖
    keep: str        # the gates that keep the old state (forget f, update z) and the cell path's product ∏ f_k
    write: str       # the gates that let new input in (input i, reset r)
    read: str        # the output gate o and the one-step stretch σ_max(∂s_t/∂s_t−1)


@dataclass(frozen=True)
class Quantity:
    """How one quantity is drawn in every panel, window and export."""
    ink: str             # a field of Inks, or "foreground", "muted", "alert": the theme's own inks
    dash: str            # "solid", "dash", "dot", "dashdot" or "dashdotdot" (plotting.DASHES: Qt's pen styles)
    width: float = 1.0   # × the theme's pen width


# Quantities drawn in one plot differ in dash as well as colour (tests/explorer/test_quantity_styles.py: DRAWN_TOGETHER)
QUANTITIES: dict[str, Quantity] = {
    "grad_h": Quantity("h", "solid"),                  # ‖∂L/∂h_t‖ (each row a shade: plotting.quantity_color)
    "grad_c": Quantity("c", "dash"),                   # ‖∂L/∂c_t‖
    "h": Quantity("h", "solid"),                       # the states h_t and c_t (the hidden-state panel)
    "c": Quantity("c", "dash"),
    "forget": Quantity("keep", "solid"),               # the gates f, z, i, r, o and the candidate (g or n)
    "update": Quantity("keep", "solid"),
    "input": Quantity("write", "dot"),
    "reset": Quantity("write", "dot"),
    "output": Quantity("read", "dashdot"),
    "candidate": Quantity("foreground", "dash"),
    "rho": Quantity("foreground", "dash", 0.75),       # ρ^(T−t), the spectrum's ρ circle, the sweep's ρ = 1
    "sigma": Quantity("muted", "dot", 0.75),           # σ_max^(T−t), its circle, the Jacobians' (γ σ_max)^(T−t)
    "linear": Quantity("alert", "dashdot", 0.75),      # the exact linear prediction ‖(W_hhᵀ)^(T−t) ∂L/∂h_T‖
    "cell_path": Quantity("keep", "dashdot", 0.75),    # ‖∂L/∂c_T ⊙ ∏_{k>t} f_k‖
    "edge_of_chaos": Quantity("c", "solid"),           # the sweep diagram's χ₁ = 1 and T = 6ξ
    "trainable_length": Quantity("keep", "dashdotdot"),
    "jacobian_step": Quantity("read", "solid"),        # σ_max(J_t)
    "jacobian_product": Quantity("h", "solid", 1.2),   # ‖∂s_T/∂s_t‖
    "lyapunov_exponent": Quantity("h", "solid", 1.2),  # λ_i after T steps (the Lyapunov panel)
    "lyapunov_limit": Quantity("alert", "dashdot", 0.75),   # ln|λ_i(W_hh)|, a linear RNN's limit T → ∞
    "long_term_singular": Quantity("h", "solid", 0.75),     # every σ_i(∂s_T/∂s_t)
    "rounding_floor": Quantity("muted", "dot", 0.75),       # the bound on their rounding error
    "sensitivity": Quantity("keep", "solid", 1.2),          # E|∂h_t/∂θ|² (the decay sensitivity panel)
    "sensitivity_white_noise": Quantity("alert", "dashdot", 0.75),   # its closed form under white input (LRU)
    "sensitivity_term": Quantity("keep", "dash"),           # ‖step t's term of ∂L/∂θ‖, beside ‖∂L/∂h_t‖
}


@dataclass(frozen=True)
class LineStyle:
    """A quantity in one theme: its colour, dash pattern (Quantity.dash) and width in pixels."""
    color: str
    dash: str
    width: float


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
    chrome: Chrome                 # the window around the plots
    inks: Inks                     # the quantities' colours (QUANTITIES)
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

    def quantity(self, name: str) -> LineStyle:
        """QUANTITIES[name] in this theme (KeyError names no quantity)."""
        q = QUANTITIES[name]
        color = getattr(self.inks, q.ink) if q.ink in Inks.__dataclass_fields__ else getattr(self, q.ink)
        return LineStyle(color, q.dash, q.width * self.pen_width)


DARK = Theme(
    name="dark",
    background="#14171c",
    foreground="#e6e6e6",
    muted="#9aa0a6",
    grid_alpha=0.18,
    palette=(SKY_BLUE, ORANGE, GREEN, PURPLE, YELLOW, VERMILLION, LIGHT_BLUE),
    alert=VERMILLION,
    font_size=10.0,
    line_width=2.0,
    chrome=DARK_CHROME,
    inks=Inks(h=SKY_BLUE, c=ORANGE, keep=GREEN, write=PURPLE, read=YELLOW),
)

LIGHT = Theme(
    name="light",
    background="#ffffff",
    foreground="#1a1a1a",
    muted="#6b6b6b",
    grid_alpha=0.25,
    palette=(BLUE, DARK_VERMILLION, DARK_GREEN, DARK_PURPLE, DARK_ORANGE, DARK_SKY_BLUE, DARK_YELLOW),
    alert=DARK_VERMILLION,
    font_size=10.0,
    line_width=2.0,
    chrome=LIGHT_CHROME,
    inks=Inks(h=BLUE, c=DARK_VERMILLION, keep=DARK_GREEN, write=DARK_PURPLE, read=DARK_YELLOW),
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
