"""Unexpected exceptions: logged to a rotating file, shown in a dialog with the traceback under Details…

    log = setup_logging()                  # <AppLocalDataLocation>/logs/explorer.log (rotating)
    reporter = ErrorReporter(window)       # a GUI-thread QObject; owns the dialog
    install_excepthook(reporter)           # sys.excepthook: slots, timers, events of the GUI thread
    ...
    restore_excepthook()                   # (tests) put the previous hook back

PySide6 hands an exception that escapes a slot, a timer callback or an event handler to
`sys.excepthook` and carries on, so one hook covers every slot of the GUI thread. An exception
in another thread is logged there and reported to the GUI thread by a queued signal to a bound
slot (widgets are touched only in the GUI thread). The app keeps running in every case.

One dialog at a time: while it is open, further errors are logged and counted in it, so a
failing repaint timer (30 calls a second) cannot bury the screen in dialogs.
"""
from __future__ import annotations

import html
import logging
import sys
import threading
import traceback
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType

from PySide6.QtCore import QObject, QStandardPaths, Qt, QThread, Signal, Slot
from PySide6.QtWidgets import QApplication, QMessageBox, QTextEdit, QWidget

LOGGER_NAME = "explorer"
LOG_FILE = "explorer.log"
LOG_BYTES = 1_000_000       # rotate at ~1 MB
LOG_BACKUPS = 3             # explorer.log.1 .. .3

log = logging.getLogger(LOGGER_NAME)
_handler: RotatingFileHandler | None = None
_previous_hook = None


def default_log_dir() -> Path:
    """<AppLocalDataLocation>/logs (e.g. ~/.local/share/GradientFlowExplorer/Explorer/logs on Linux)."""
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppLocalDataLocation)
    return Path(base or Path.home() / ".gradient-flow-explorer") / "logs"


def setup_logging(log_dir: str | Path | None = None) -> Path | None:
    """Send the 'explorer' logger to <log_dir>/explorer.log, rotating. Returns the file's path, or None
    when the folder cannot be written (errors then go to stderr only; the app still starts)."""
    global _handler
    directory = Path(log_dir) if log_dir is not None else default_log_dir()
    path = directory / LOG_FILE
    if _handler is not None:
        if Path(_handler.baseFilename) == path.resolve():
            return path
        log.removeHandler(_handler)
        _handler.close()
        _handler = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(path, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8")
    except OSError as e:
        print(f"gradflow: cannot write the log file {path}: {e.strerror or e}", file=sys.stderr)
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(threadName)s] %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    _handler = handler
    return path


def log_path() -> Path | None:
    """The file errors are logged to (None before setup_logging or when it failed)."""
    return Path(_handler.baseFilename) if _handler is not None else None


def format_exception(exc_type, exc: BaseException, tb: TracebackType | None) -> str:
    return "".join(traceback.format_exception(exc_type, exc, tb))


def summary(exc: BaseException) -> str:
    """'ValueError: what it said' (the type alone when it said nothing)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ErrorReporter(QObject):
    """Shows unexpected errors of the app in one non-blocking dialog. Lives in the GUI thread."""

    _report = Signal(str, str, str)   # title, message, details: from any thread, queued to show()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._parent = parent
        self.dialog: QMessageBox | None = None   # the open dialog, if any (tests read and close it)
        self.count = 0                           # errors reported since the app started
        self._more = 0                           # errors that arrived while the dialog was open
        self._report.connect(self.show)

    def report_exception(self, exc_type, exc: BaseException, tb: TracebackType | None,
                         title: str = "Unexpected error"):
        """Log the exception with its traceback and show it (from any thread)."""
        details = format_exception(exc_type, exc, tb)
        log.error("%s: %s\n%s", title, summary(exc), details.rstrip())
        self.report(title, summary(exc), details, logged=True)

    def report(self, title: str, message: str, details: str = "", logged: bool = False):
        """Show `message` (and `details` under Details…); log it unless the caller did. Any thread."""
        if not logged:
            log.error("%s: %s%s", title, message, f"\n{details.rstrip()}" if details else "")
        app = QApplication.instance()
        if app is not None and QThread.currentThread() is app.thread():
            self.show(title, message, details)
        else:
            self._report.emit(title, message, details)

    @Slot(str, str, str)
    def show(self, title: str, message: str, details: str):
        self.count += 1
        if self.dialog is not None:          # one dialog at a time; count the rest
            self._more += 1
            self.dialog.setInformativeText(f"{self._more} more error{'s' if self._more > 1 else ''} since "
                                           f"(see the log{_where()}). The app keeps running.")
            return
        parent = self._parent if isinstance(self._parent, QWidget) and self._parent.isVisible() else None
        text = f"<b>{html.escape(title, quote=False)}</b><br>{html.escape(message, quote=False)}"
        box = QMessageBox(QMessageBox.Icon.Critical, title, text,
                          QMessageBox.StandardButton.Close, parent)
        box.setObjectName("errorDialog")
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setInformativeText(f"The app keeps running; what you were doing may not have finished. "
                               f"Details are in the log{_where()}.")
        if details:
            box.setDetailedText(details)    # Qt's "Show Details…" button
        widen(box)
        box.finished.connect(self._on_dialog_finished)
        self.dialog = box
        self._more = 0
        box.open()                          # not exec(): the event loop (and training) keeps running

    @Slot()
    def _on_dialog_finished(self):
        if self.dialog is not None:
            self.dialog.deleteLater()
        self.dialog = None

    def close_dialog(self):
        if self.dialog is not None:
            self.dialog.done(0)


def widen(box: QMessageBox, width: int = 520):
    """Qt sizes a message box to its shortest line: give the text room, and the traceback under
    Details… a box wide and tall enough to read it."""
    box.setStyleSheet(f"QLabel#qt_msgbox_label, QLabel#qt_msgbox_informativelabel {{ min-width: {width}px; }}")
    details = box.findChild(QTextEdit)
    if details is not None:
        details.setMinimumSize(width + 120, 260)
        details.setLineWrapMode(QTextEdit.LineWrapMode.NoWrap)


def _where() -> str:
    path = log_path()
    return f": {path}" if path is not None else ""


def install_excepthook(reporter: ErrorReporter):
    """Route uncaught exceptions (GUI-thread slots included) to `reporter`; Ctrl+C still quits."""
    global _previous_hook
    if _previous_hook is None:
        _previous_hook = sys.excepthook

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            (_previous_hook or sys.__excepthook__)(exc_type, exc, tb)
            return
        try:
            reporter.report_exception(exc_type, exc, tb)
        except Exception:  # noqa: BLE001 - the hook must never raise (e.g. the reporter is gone)
            sys.__excepthook__(exc_type, exc, tb)

    def thread_hook(args: threading.ExceptHookArgs):
        if args.exc_type is SystemExit:
            return
        hook(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = hook
    threading.excepthook = thread_hook   # Python threads (a QThread's slots go through sys.excepthook)


def restore_excepthook():
    global _previous_hook
    if _previous_hook is not None:
        sys.excepthook = _previous_hook
        threading.excepthook = threading.__excepthook__
        _previous_hook = None
