"""A window on its screen: its size at a first launch (first_launch) and kept inside the screen's available area
whenever it moves, resizes or changes state (fit_to_screen), full screen and back (set_full_screen); the main,
comparison and sweep windows share them."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, QSize, Qt, QTimer, Slot
from PySide6.QtWidgets import QWidget

RELAYOUT_DELAY_MS = 120     # a move or resize is laid out and fitted once it has settled this long
FIRST_LAUNCH = (1280, 800, 0.9)   # width, height, or this share of a larger screen
FILL_SCREENS_UP_TO = (1920, 1200)   # the first launch on a screen up to this size is maximised: a laptop or projector
                                    # has no room to spare (at 1920x1080, 90% of it showed two panels, all of it four)


def first_launch(window: QWidget) -> None:
    """A window's size where nothing was saved (the main window's first launch, every comparison window):
    maximised on a screen up to FILL_SCREENS_UP_TO, else FIRST_LAUNCH's share of it; fitted to the screen."""
    screen = window.screen().availableGeometry() if window.screen() is not None else QRect()
    width, height, share = FIRST_LAUNCH
    if screen.width() > 0:
        width = max(width, int(share * screen.width()))
        height = max(height, int(share * screen.height()))
    window.resize(width, height)   # its size once restored
    if 0 < screen.width() <= FILL_SCREENS_UP_TO[0] and 0 < screen.height() <= FILL_SCREENS_UP_TO[1]:
        window.setWindowState(window.windowState() | Qt.WindowState.WindowMaximized)   # (shown maximised)
    fit_to_screen(window)


def screen_room(window: QWidget) -> QSize:
    """The available size of the window's screen (empty without one): saved with its geometry (on_larger_screen)."""
    return window.screen().availableGeometry().size() if window.screen() is not None else QSize()


def on_larger_screen(window: QWidget, saved_room: object) -> bool:
    """Whether `window` (its saved geometry restored) is on a screen with more room than `saved_room`, its screen's
    when its geometry was saved (screen_room; None where it was not saved): a geometry fitted to a smaller screen
    (997×720 on a 1280×720 projector) is then no size for this one."""
    room = screen_room(window)
    return isinstance(saved_room, QSize) and not saved_room.isEmpty() and room.isValid() and \
        (room.width() > saved_room.width() or room.height() > saved_room.height())


class _KeepOnScreen(QObject):
    """Fits its window to its screen again once it has been moved, resized or (un)maximised and the window manager
    is done: a window manager places a window and adds its frame only once it is shown, and tells its state, its
    size and its frame's extents in separate events (a fit between them would measure a stale frame)."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(RELAYOUT_DELAY_MS)
        self._timer.timeout.connect(self._fit)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.WindowStateChange) \
                and watched.isVisible():
            self._timer.start()
        return False

    @Slot()
    def _fit(self):
        fit_to_screen(self.parent())


def fit_to_screen(w: QWidget) -> None:
    """A window (frame included) inside its screen's available area (a full-screen window: inside the
    screen): shrunk, then moved; and again whenever it is moved or resized (_KeepOnScreen). A maximised or
    full-screen window that grew past it (its minimum size grew while the type changed) gets the screen's
    area back."""
    if w.findChild(_KeepOnScreen, options=Qt.FindChildOption.FindDirectChildrenOnly) is None:
        w.installEventFilter(_KeepOnScreen(w))
    screen = w.screen()
    if screen is None:
        return
    room = screen.geometry() if w.isFullScreen() else screen.availableGeometry()
    frame = w.frameGeometry()
    extra_w, extra_h = frame.width() - w.width(), frame.height() - w.height()
    if w.isFullScreen() or w.isMaximized():
        # the window manager sized it: only a window past the area is fitted (its client rectangle, not the frame:
        # Qt learns the frame's new extents after the state, and a fit on stale ones would un-maximise it). Scaled
        # (QT_SCALE_FACTOR 2 on a 4K screen), an odd number of screen pixels rounds to one px more than the area:
        # fitted, Qt un-maximised the window, the window manager maximised it again, and so on without end.
        rounding = 0 if w.devicePixelRatioF() == 1 else 1
        if not room.adjusted(-rounding, -rounding, rounding, rounding).contains(w.geometry()):
            left, top = w.x() - frame.x(), w.y() - frame.y()
            w.setGeometry(room.x() + left, room.y() + top, room.width() - extra_w, room.height() - extra_h)
        return
    width = min(w.width(), room.width() - extra_w)
    height = min(w.height(), room.height() - extra_h)
    if (width, height) != (w.width(), w.height()):
        w.resize(width, height)
    frame = w.frameGeometry()
    # its top left on the area even where its minimum size is larger than the area (a window manager moved a title
    # bar pushed above the screen straight back: moved again, and so on without end)
    x = max(min(frame.x(), room.right() + 1 - frame.width()), room.x())
    y = max(min(frame.y(), room.bottom() + 1 - frame.height()), room.y())
    if (x, y) != (frame.x(), frame.y()):
        w.move(x, y)


def set_full_screen(window: QWidget, on: bool) -> None:
    """F11: the whole screen, and back to the state before (maximised or not)."""
    state = window.windowState()
    window.setWindowState(state | Qt.WindowState.WindowFullScreen if on else state & ~Qt.WindowState.WindowFullScreen)
