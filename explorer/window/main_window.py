"""The main window wires the app together: toolbar and menus (actions), scenario banner, settings dock, panel
docks (presentation, layout), timeline and status readout. It owns one `EngineConnection` and never trains:
records arrive by signal at bound slots and go to its AppModel (explorer.model: the scenario, the applied config,
the run, the tour), which the window observes and sends intents to; a FrameDrawer draws the run ~30 times a second.
Sessions, exports, recording, recovery after a blow-up and failures are helpers of their own (explorer.window)."""
from __future__ import annotations

import html
from collections.abc import Callable
from functools import partial
from typing import Any

from gradflow.core.config import Config
from gradflow.core.presets import DEFAULT_PRESET, Preset, load_preset
from gradflow.core.records import History, Record
from gradflow.explorer import errors
from gradflow.explorer.engine import calls as engine_calls
from gradflow.explorer.engine.worker import EngineConnection
from gradflow.explorer.model import AppModel
from gradflow.explorer.model.tour import TourModel
from gradflow.explorer.panels import PANELS, connect_panels
from gradflow.explorer.theme import DEFAULT_THEME, THEMES, Theme, presentation
from gradflow.explorer.window import actions
from gradflow.explorer.window.checkpoints import CHECKPOINT_EVERY, Checkpoints
from gradflow.explorer.window.dialogs import Problems, ask_discard_run
from gradflow.explorer.window.drawing import FrameDrawer
from gradflow.explorer.window.exports import WindowExports
from gradflow.explorer.window.failures import Failures
from gradflow.explorer.window.frame import dock_host, make_dock, restore_view, save_view
from gradflow.explorer.window.presentation import WindowLayout
from gradflow.explorer.window.recording import AnimationRecorder
from gradflow.explorer.window.recovery import Recovery
from gradflow.explorer.window.scenarios import Scenarios
from gradflow.explorer.window.screen_fit import set_full_screen
from gradflow.explorer.window.sessions import SessionFiles, apply_view
from gradflow.explorer.window.settings import SettingsPanel
from gradflow.explorer.window.status import StatusReadout, StepRate
from gradflow.explorer.window.style import apply_to_app
from gradflow.explorer.window.timeline import TimelineBar
from gradflow.explorer.window.widgets import LoadingOverlay, MessageBar, ScenarioBanner
from PySide6.QtCore import QSettings, Qt, Slot
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMessageBox, QVBoxLayout, QWidget

ORGANIZATION, APPLICATION = "GradientFlowExplorer", "Explorer"


class MainWindow(QMainWindow):
    """The explorer. `preset`: a scenario name or TOML path; `config`: run this config instead of the
    preset's (the banner then says 'modified'); `settings`: where layout/theme persist (tests pass a
    temporary one); `panels`: Panel classes (default explorer.panels.PANELS)."""

    def __init__(self, preset: str | None = None, config: Config | None = None,
                 settings: QSettings | None = None, panels: list[type] | None = None):
        super().__init__()
        self.setWindowTitle("Gradient Flow Explorer")
        self.setObjectName("MainWindow")
        self.store = settings if settings is not None else QSettings(ORGANIZATION, APPLICATION)
        scenario = load_preset(preset or DEFAULT_PRESET)
        config = config if config is not None else scenario.config
        speed_name = str(self.store.value("speed", actions.DEFAULT_SPEED))
        speed_name = speed_name if speed_name in dict(actions.SPEEDS) else actions.DEFAULT_SPEED
        self.connection = EngineConnection(config, dict(actions.SPEEDS)[speed_name])
        self.worker = self.connection.worker
        # the scenario, applied config, run and tour: this window observes it and sends it intents (asks it things)
        self.model = AppModel(scenario, self.worker, config, ask_discard=lambda steps, action:
                              self.session_files.discard_answer(self.ask_discard_run(self, steps, action)))
        self.model.speed = dict(actions.SPEEDS)[speed_name]
        self.run, self.scenarios = self.model.run, Scenarios(self, self)   # the run as the window knows it, the picker
        self._closing = False
        self.asks_on_close = True   # False: close_discarding
        self.rate = StepRate()
        self.theme: Theme = DEFAULT_THEME
        self.errors = errors.ErrorReporter(self)             # unexpected exceptions: log + one dialog
        self.problems = Problems(self)                       # expected failures: a non-blocking dialog
        self.session_files = SessionFiles(self, self)        # Save / Open Session
        self.exports = WindowExports(self, self)             # File ▸ Export
        self.recorder = AnimationRecorder(self, self.exports, self)   # an animation being recorded
        self.checkpoints = Checkpoints(self.call_in_worker, self.run)   # snapshots for Revert
        self.checkpoint_every = CHECKPOINT_EVERY

        self._build_central()
        self.settings_panel = SettingsPanel(self.model.settings)
        self.panels = [cls() for cls in (panels if panels is not None else PANELS)]
        self._build_docks()
        actions.build_run_actions(self)
        actions.build_toolbar(self, speed_name)
        self.layouts = WindowLayout(self)                    # dock layout, presentation mode, screen fitting
        actions.build_menus(self)
        self.readout = StatusReadout()
        self.readout.place_in(self.statusBar())
        self._update_banner()
        self.readout.set_state("building …")
        self.overlay = LoadingOverlay(self.dock_host)   # until step 1 is drawn: no empty panels on show
        self.failures = Failures(self.message_bar, self)     # a step or a panel that raised: the message bar
        self.drawer = FrameDrawer(self.panels, self.run, self.worker, self.timeline, self.readout, self.overlay,
                                  self.rate, self.failures.panel_failed, self)   # the panels, ~30 times a second

        self.recovery = Recovery(self, self.model, self.checkpoints, self.settings_panel, self.message_bar,
                                 self.worker, self)          # after a blow-up: Revert, Continue
        self.recovery.reverted.connect(self._on_reverted)
        self.session_files.opened.connect(self._on_session_opened)
        self.session_files.path_changed.connect(self._update_title)
        self.session_files.saved.connect(self.model.run_saved)
        self.session_files.done.connect(self._on_file_work_done)
        self._connect_worker()
        connect_panels(self.panels, self.worker)   # eigenvalue editing, Jacobians on demand
        for panel in self.panels:   # a drag with hold ρ on turns it off, undoing every edit on again (the model says)
            if hasattr(panel, "eigenvalue_edited"):
                panel.eigenvalue_edited.connect(self._on_eigenvalue_edited)
                panel.edits_undone.connect(self.model.eigenvalue_edits_undone)
        self._observe_model()
        self.settings_panel.rebuild_requested.connect(self._on_rebuild_requested)
        self.settings_panel.check_requested.connect(self._on_check_requested)

        restore_view(self)   # theme, presentation mode, banner, geometry and dock layout of the last launch
        self.connection.start()

    # -- construction ----------------------------------------------------------------------------------
    def _build_central(self):
        self.banner = ScenarioBanner()
        self.banner.close_button.clicked.connect(self._on_banner_closed)
        self.banner.step_clicked.connect(self._on_caption_step)
        self.message_bar = MessageBar()
        self.dock_host = dock_host()          # the docks live in an inner window, below the banner
        central = QWidget()
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.banner)
        column.addWidget(self.dock_host, 1)
        self.message_bar.setParent(central)           # at the docks' bottom, in room they leave it (_build_docks)
        self.timeline = TimelineBar(lambda: self.run.history)   # scrub back through the recorded steps
        column.addWidget(self.timeline)
        self.timeline.scrubbed.connect(self._on_scrubbed)
        self.timeline.live.connect(self._on_timeline_live)
        self.setCentralWidget(central)

    def _build_docks(self):
        self.settings_dock = make_dock(self.dock_host, "Settings", self.settings_panel, "dock_Settings")
        self.settings_dock.titleBarWidget().label.setToolTip("The run's configuration: every key of core.config")
        self.panel_docks: dict[str, QDockWidget] = {}
        for panel in self.panels:
            name = type(panel).__name__
            dock = make_dock(self.dock_host, panel.title or name, panel, f"dock_{name}")
            dock.titleBarWidget().label.setToolTip(panel.caption)
            dock.visibilityChanged.connect(self._on_dock_visibility_changed)
            self.panel_docks[name] = dock
        self.message_bar.float_over(self.dock_host)
        # Only placed here; the real layout is restored or built once the window has its size
        # (tabifying before the first show leaves Qt's tab bars behind as stray widgets).
        self.dock_host.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.settings_dock)
        for dock in self.panel_docks.values():
            self.dock_host.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
            dock.hide()   # stacked, their minimum heights would make the first window too tall

    def _observe_model(self):
        model = self.model
        model.tour.changed.connect(self._on_tour_changed)
        model.scenario_changed.connect(self._on_scenario_changed)
        model.comparison_requested.connect(self.scenarios.open_comparison)
        model.notice.connect(self._on_notice)
        model.config_changed.connect(self._on_applied)

    def _connect_worker(self):
        w = self.worker   # every connection goes to a bound slot of this GUI-thread object
        w.record_ready.connect(self._on_record)
        w.rebuilt.connect(self._on_rebuilt)
        w.rebuild_failed.connect(self._on_rebuild_failed)
        w.config_changed.connect(self._on_config_changed)
        w.update_failed.connect(self._on_update_failed)
        w.diverged.connect(self._on_diverged)
        w.failed.connect(self._on_failed)
        w.native_status.connect(self.readout.show_native)   # the compiled LSTM loops: compiling, compiled, Python

    # -- theme -------------------------------------------------------------------------------------------
    def set_theme(self, name: str, presentation_mode: bool | None = None):
        """Apply THEMES[name] (optionally its presentation variant) to the Qt stylesheet and every panel."""
        if presentation_mode is None:
            presentation_mode = self.theme.presentation
        theme = presentation(THEMES[name], presentation_mode)
        self.theme = theme
        apply_to_app(self, theme)
        for panel in self.panels:
            try:
                panel.apply_theme(theme)
            except Exception as e:  # noqa: BLE001 - one panel must not take the window down
                self.failures.panel_failed(panel, e)
        actions.show_theme(self, name, presentation_mode)
        self.drawer.dirty = True

    set_fullscreen = set_full_screen   # F11 (explorer.window.screen_fit)

    @Slot()
    def _on_banner_closed(self):
        self.banner_action.setChecked(False)

    # -- controls --------------------------------------------------------------------------------------
    def is_playing(self) -> bool:
        return self.worker.is_playing()

    preset = property(lambda self: self.model.preset, lambda self, preset: self.model.set_scenario(preset),
                      doc="The scenario the window runs (AppModel.preset).")
    tour: TourModel = property(lambda self: self.model.tour, doc="The scenario's tour (AppModel.tour).")

    def play(self):
        """Play; in a scenario with a tour, to its next stop (AppModel.play)."""
        if self.message_bar.kind in ("error", "warning"):
            self.message_bar.clear()
        self.model.play()
        self.controls.show(True)

    def pause(self):
        self.controls.pause()

    def step(self):
        """One optimizer step, fully recorded."""
        self.controls.step()

    def reset(self):
        """Start again from step 1 with the current settings (asked first over a long run)."""
        if self.model.reset():
            self.controls.show(False)
            self.message_bar.clear()

    def choose_speed(self, index: int):
        """The Speed setting; the scenario's pace on its tour where that is slower (AppModel.rate)."""
        self.model.set_speed(self.speed_combo.currentData())

    def show_run_state(self, playing: bool):
        self.readout.set_state("▶ running" if playing else "■ paused")

    # -- settings -> worker ----------------------------------------------------------------------------
    @Slot(int, int, object)
    def _on_eigenvalue_edited(self, row: int, index: int, value: complex):
        self.model.eigenvalue_dragged()

    ask_discard_run = staticmethod(ask_discard_run)   # (parent, steps, action) -> "save" | "discard" | "cancel"

    @Slot(object)
    def _on_rebuild_requested(self, config: Config):
        """Apply & rebuild (asked first over a long run, AppModel.rebuild)."""
        if self.model.rebuild(config):
            self.controls.show(False)
            self.message_bar.clear()

    @Slot(object)
    def open_config(self, config: Config):
        """Rebuild on `config` (a sweep's point) as Apply does, in front of the window that asked."""
        self.raise_()
        self.activateWindow()
        if self.model.rebuild(config, "Opening the sweep's point"):
            self.controls.show(False)
            self.message_bar.clear()

    def ask_open_session(self):
        """File ▸ Open Session (asked first over a long run)."""
        if self.model.may_discard("Opening a session"):
            self.session_files.ask_open()

    # -- worker -> GUI (queued, bound slots) ---------------------------------------------------------------
    @Slot(object)
    def _on_record(self, record: Record):
        if self.session_files.take_seed(record):   # the rebuilt model's step 1, about to be replaced
            return
        self.model.add_record(record)
        self.rate.add(record.step)
        if self.message_bar.kind == "info":
            self.message_bar.clear()
        self.drawer.dirty = True
        if self.session_path is not None and not self.isWindowModified():
            self.setWindowModified(True)
        if record.diverged is None and (record.step == 1 or record.step % self.checkpoint_every == 0):
            self.checkpoints.request()
        if self.recording is not None:
            self.recorder.on_record(record)

    @Slot(object)
    def _on_rebuilt(self, config: Config):
        self.rate.reset()
        self.checkpoints.new_model()     # snapshots of another model
        self.model.on_rebuilt(config)    # the settings panel shows the model's new settings
        self.scenarios.select(self.preset.name)
        self._update_banner()
        if not self.worker.is_playing():
            self.controls.show(False)

    @Slot(object, str)
    def _on_rebuild_failed(self, config: Config, message: str):
        self.overlay.hide()
        if self.session_files.rebuild_failed(message):   # Open Session: the saved run cannot be rebuilt here
            return
        self.model.on_rebuild_failed()
        self.scenarios.select(self.preset.name)
        self.settings_panel.show_error(message)
        self.message_bar.show_message(
            "warning", f"<b>The model was not rebuilt.</b> {html.escape(message, quote=False)} "
                       f"{'The previous model keeps running.' if self.latest is not None else ''}")

    @Slot(object)
    def _on_config_changed(self, config: Config):
        self.model.on_config_changed(config)

    # -- model -> window -----------------------------------------------------------------------------------
    def _on_tour_changed(self, tour: TourModel):
        self.message_bar.show_tour(tour, self.play)

    def _on_scenario_changed(self, preset: Preset):
        self.scenarios.select(preset.name)
        self._update_banner()

    def _on_applied(self, config: Config):
        """The model's applied config changed (live settings, a revert, a rebuild; the settings panel shows the
        model's settings itself)."""
        self._update_banner()

    def _on_notice(self, text: str):
        self.message_bar.show_message("warning", text)

    @Slot(str)
    def _on_update_failed(self, message: str):
        self.settings_panel.show_error(message)

    @Slot(object)
    def _on_diverged(self, record: Record):
        if self.session_files.restoring is not None:
            return
        self.controls.show(False)
        self.recovery.diverged(record)
        self.draw_frame()

    @Slot(str, str)
    def _on_failed(self, message: str, details: str):
        self.overlay.hide()
        self.controls.show(False)
        if self.recording is not None:
            self.recorder.finish(f"training failed: {message}")
        self.failures.training_failed(message, details)

    # -- timeline ---------------------------------------------------------------------------------------------
    @Slot(object)
    def _on_scrubbed(self, record: Record):
        self.model.select_step(record)
        self.drawer.dirty = True

    @Slot()
    def _on_timeline_live(self):
        self.model.select_step(None)
        self.drawer.dirty = True

    @Slot(int)
    def _on_caption_step(self, step: int):
        """A step the explanation speaks of: the timeline shows it (the nearest kept before it if it is gone);
        one still to come is played to, and paused at."""
        latest = self.run.latest
        if latest is None or step > latest.step:
            self.controls.play_to(step)
            return
        self.timeline.refresh()
        kept = [record.step for record in self.timeline.records()]
        earlier = [i for i, kept_step in enumerate(kept) if kept_step <= step]
        if earlier:
            self.timeline.scrub_to(earlier[-1])

    def go_live(self):
        """Panels follow the newest step again (before Revert, Open, recording ...)."""
        self.timeline.go_live()

    # -- drawing (explorer.window.drawing) -----------------------------------------------------------------
    def draw_frame(self):
        """Draw the frame record on the panels on screen now (FrameDrawer.draw)."""
        self.drawer.draw()

    def frame_record(self) -> Record | None:
        """What the panels draw (RunState.frame_record)."""
        return self.run.frame_record()

    shown_record = property(lambda self: self.drawer.shown_record, doc="What the panels drew last.")
    latest = property(lambda self: self.run.latest, doc="The newest record received.")
    history = property(lambda self: self.run.history, doc="The window's mirror of the run (RunState.history).")
    diverged_record = property(lambda self: self.run.diverged, doc="The refused update's record, until resolved.")

    @Slot(bool)
    def _on_dock_visibility_changed(self, visible: bool):
        if visible:
            self.drawer.dirty = True   # a panel that was hidden catches up at the next frame

    def _update_banner(self):
        self.banner.set_scenario(self.preset.title, self.preset.explanation, self.model.modified)

    # -- calls into the engine (between two steps), problems the user can act on -------------------------------
    def call_in_worker(self, what: str, fn: Callable[[Any], Any], on_done: Callable[[Any, str], None]) -> str:
        """Run fn(engine) between two steps; on_done(result, error) here after (EngineConnection.call)."""
        return self.connection.call(what, fn, on_done)

    def show_problem(self, title: str, text: str, informative: str = "", details: str = ""):
        """A message box for an expected failure that does not block (dialogs.Problems)."""
        self.problems.show(title, text, informative, details)

    @property
    def last_message_box(self) -> QMessageBox | None:
        """The problem showing now (None when closed)."""
        return self.problems.last

    def _update_title(self):
        """'Gradient Flow Explorer — demo.gfe' (saved to or opened from), '*' once the run moves on (_on_record)."""
        path = self.session_files.path
        self.setWindowTitle("Gradient Flow Explorer" + (f" — {path.name}[*]" if path is not None else ""))
        self.setWindowModified(False)

    # -- sessions (explorer.window.sessions) -------------------------------------------------------------------
    @Slot(dict, object, object, list)
    def _on_session_opened(self, view: dict, history: History, seed: Record | None, saved: list[Record]):
        """An opened session's run replaces this one (SessionFiles.opened); the panels see the rebuilt model's step
        1 (`seed`), then what they showed when it was saved: a new run."""
        self.drawer.show_all(([seed] if seed is not None else []) + saved, history)
        self.go_live()
        self.model.adopt(history, saved, seed)
        self.drawer.redraw_all()
        self.rate.reset()
        self.checkpoints.new_model()
        apply_view(self, view)
        self._update_banner()
        if self.latest is None:     # a session saved without what the panels showed: one step draws them
            self.worker.step_once()
        else:
            self.checkpoints.request()
            self.draw_frame()

    @Slot()
    def _on_file_work_done(self):
        self.controls.show(self.worker.is_playing())

    # -- the helpers' ways in, for scripts and tests: sessions, exports, recording, recovery ------------------
    session_path = property(lambda self: self.session_files.path, doc="The .gfe this run was opened from / saved to.")
    save_session = property(lambda self: self.session_files.save, doc="(path): the run and the view (SessionFiles).")
    open_session = property(lambda self: self.session_files.open, doc="(path): a saved run and its view (SessionFiles).")
    dashboard_rect = property(lambda self: self.exports.dashboard_rect, doc="(): the panels' part of the docks.")
    export_dashboard_png = property(lambda self: self.exports.dashboard_png, doc="(path, scale=1.0) -> bool")
    export_panel = property(lambda self: self.exports.panel, doc="(name, path, scale=2.0) -> bool: PNG, SVG or PDF.")
    export_run_data = property(lambda self: self.exports.run_data, doc="(path) -> bool: the history as CSV or NPZ.")
    copy_figure = property(lambda self: self.exports.copy_figure, doc="(scale=2.0): the dashboard on the clipboard.")
    recording = property(lambda self: self.recorder.current, doc="The animation being recorded (None: none).")
    record_animation = property(lambda self: self.recorder.start,
                                doc="(path, steps, frames, target='dashboard', fps) -> bool (AnimationRecorder).")
    continue_with = property(lambda self: self.recovery.continue_with,
                             doc="(values) -> bool: after a divergence, play on with `values` (Recovery).")

    # -- after a blow-up (explorer.window.recovery), engine-checked values -------------------------------
    @Slot(int)
    def _on_reverted(self, step: int):
        """The engine is back at the checkpoint of `step`: the panels show what they showed then."""
        self.go_live()
        self.drawer.redraw_all()
        self.rate.reset()
        self.draw_frame()
        self._update_banner()
        self.readout.step.setText(f"weights of step {step:,}")

    @Slot(str, object)
    def _on_check_requested(self, key: str, config: Config):
        """A value only the engine can judge (a text file): checked in the worker, refused at the field."""
        self.call_in_worker("check", partial(engine_calls.check_config, config),
                            partial(self._on_check_done, key, getattr(config, key)))

    def _on_check_done(self, key: str, value: object, result: object, error: str):
        if error:
            self.settings_panel.refuse(key, value, error)
        else:
            self.model.settings.check_passed(key, value)

    # -- lookup helpers --------------------------------------------------------------------------------------
    def panel(self, name: str):
        """The panel whose class is called `name`."""
        return next(p for p in self.panels if type(p).__name__ == name)

    # -- close -----------------------------------------------------------------------------------------------
    windows = property(lambda self: [w for w in self.findChildren(QMainWindow) if w.isWindow() and w.isVisible()],
                       doc="Its open sweep and comparison windows: they close with it, each asking what it would lose.")

    def close_discarding(self):
        """Close as Quit does, without asking about a long run, a comparison or a sweep's points (Ctrl+C, SIGTERM)."""
        self.asks_on_close = False
        for window in self.windows:
            window.close_discarding()
        self.close()

    def closeEvent(self, event):   # Quit: asked about a long run not saved, then its other windows close (asking)
        if not self._closing and self.asks_on_close and not (
                self.model.may_discard("Quitting") and all(window.close() for window in self.windows)):
            event.ignore()
            return
        if not self._closing:
            self._closing = True
            if self.recording is not None:
                self.recorder.cancel()
            self.session_files.wait_for_saves()
            save_view(self)
            self.drawer.frame_timer.stop()
            self.connection.close_for(self)
        super().closeEvent(event)
