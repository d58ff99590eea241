import os

import pytest
from gradflow.explorer import errors
from gradflow.explorer.compare.window import CompareWindow
from gradflow.explorer.engine.worker import ENGINE_ENV
from gradflow.explorer.window.main_window import MainWindow
from gradflow.explorer.window.sweep_window import SweepWindow
from PySide6.QtCore import QSettings, QStandardPaths
from window_helpers import SMALL, WAIT_MS, DiscardAnswers, TrustAnswerer  # tests/explorer is on sys.path

# Windows here run their engine in the worker's thread: a test can then reach into the trainer (and pass
# it lambdas), and the suite does not start a process per window. The app's default, the engine in a
# process of its own, is tested through the same loop in test_worker.py (every session test runs in both)
# and end to end in test_engine_process.py; GRADFLOW_ENGINE=process runs this whole suite that way (the
# tests that reach into the trainer then fail by design).
os.environ.setdefault(ENGINE_ENV, "thread")


def pytest_configure(config):
    config.addinivalue_line("markers", "window_size(width, height): the size the `window` fixture opens at")


@pytest.fixture(autouse=True)
def private_settings(tmp_path):
    """Nothing in the GUI tests may read or write the user's real settings or logs."""
    QStandardPaths.setTestModeEnabled(True)
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, str(tmp_path / "user"))
        QSettings.setPath(fmt, QSettings.Scope.SystemScope, str(tmp_path / "system"))


def _answered(monkeypatch, window_class, hook: str) -> DiscardAnswers:
    """window_class.hook (a "Discard …?" question) answered by a DiscardAnswers, "discard" unless a test sets
    `answer`: the test's windows then close at its end without a modal question, however long they ran."""
    questions = DiscardAnswers()
    monkeypatch.setattr(window_class, hook, staticmethod(questions))
    return questions


@pytest.fixture(autouse=True)
def sweep_questions(monkeypatch) -> DiscardAnswers:
    """Every "Discard the sweep?" (SweepWindow.may_discard: finished points not exported)."""
    return _answered(monkeypatch, SweepWindow, "ask_discard_sweep")


@pytest.fixture(autouse=True)
def run_questions(monkeypatch) -> DiscardAnswers:
    """Every "Discard the run?" (AppModel.may_discard: Quit, Apply, a scenario, Reset, Open; a test may also set
    its window's own ask_discard_run)."""
    return _answered(monkeypatch, MainWindow, "ask_discard_run")


@pytest.fixture(autouse=True)
def comparison_questions(monkeypatch) -> DiscardAnswers:
    """Every "Discard the comparison?" (CompareWindow: closed over a long comparison, by itself or by Quit)."""
    return _answered(monkeypatch, CompareWindow, "ask_discard_comparison")


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "explorer.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def open_window(qtbot, tmp_path, settings):
    """open_window(config=SMALL, name=None, store=None, size=None, **kwargs): a shown window whose first
    record is drawn, closed after the test. `name` gives it its own settings file; `store` a given one."""
    opened = []

    def open_(config=SMALL, name: str | None = None, store: QSettings | None = None, size=None, **kwargs):
        if store is None:
            store = QSettings(str(tmp_path / f"{name}.ini"), QSettings.Format.IniFormat) if name else settings
        window = MainWindow(config=config, settings=store, **kwargs)
        qtbot.addWidget(window)
        opened.append(window)   # qtbot only holds a weak reference
        if size is not None:
            window.resize(*size)
        window.show()
        qtbot.waitUntil(lambda: window.shown_record is not None, timeout=WAIT_MS)
        return window

    yield open_
    for window in opened:   # unasked, whatever the test answers its questions with (a Cancel would keep it open)
        window.close_discarding()


@pytest.fixture
def window(open_window, request):
    """A shown window, at the size of the test's (or its module's) `window_size` mark if it has one."""
    size = request.node.get_closest_marker("window_size")
    return open_window(size=size.args if size else None)


@pytest.fixture
def log_file(tmp_path):
    """The log file the app writes, set up as at start-up (and the exception hook given back after)."""
    path = errors.setup_logging(tmp_path / "logs")
    yield path
    errors.restore_excepthook()


@pytest.fixture
def trust_answers(qapp):
    """trust_answers(run, remember=False): a TrustAnswerer (window_helpers) answering every trust prompt from
    now on in this test."""
    installed = []

    def install(run: bool, remember: bool = False) -> TrustAnswerer:
        answerer = TrustAnswerer(run, remember)
        qapp.installEventFilter(answerer)
        installed.append(answerer)
        return answerer

    yield install
    for answerer in installed:
        qapp.removeEventFilter(answerer)
