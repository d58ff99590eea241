"""The window lowers its frame rate, never the training speed: FrameDrawer driven by its timer's signal on a
fake wall clock, with panels whose drawing costs fake CPU time (the pacer's clock), on a machine with a fake
count of runnable tasks. No real time is measured."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from gradflow.explorer.window.drawing import (
    FRAME_PERIOD_S,
    FRAME_POLL_MS,
    LOAD_SMOOTHING_S,
    OWN_HELPERS,
    SLOWEST_FRAME_S,
    THREAD_SHARE,
    WINDOW_SHARE,
    FrameDrawer,
    FramePacer,
    MachineLoad,
    window_budget,
)
from PySide6.QtWidgets import QWidget


class Clock:
    """A clock (or a load) that moves only when told."""

    def __init__(self):
        self.now = 0.0

    def __call__(self, *_isolated) -> float:
        return self.now


class CostlyPanel(QWidget):
    """Each record it draws costs `cost` seconds of the (fake) CPU clock."""

    def __init__(self, cpu: Clock):
        super().__init__()
        self.cpu, self.cost, self.frames = cpu, 0.0, 0

    def show_record(self, record, history):
        self.cpu.now += self.cost
        self.frames += 1


@pytest.fixture
def scene(qtbot):
    """(drawer, panel, wall clock, runnable tasks): a drawer on one shown panel, playing, on 2 cores and a machine
    with no other load (the window's main thread and the engine are its runnable tasks), its timer stopped (the
    test sends its ticks)."""
    wall, cpu, runnable = Clock(), Clock(), Clock()
    runnable.now = 2.0
    panel = CostlyPanel(cpu)
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    run = SimpleNamespace(frame_record=lambda: object(), history=None, scrubbed=None, latest=None)
    worker = SimpleNamespace(playing=True, isolated=True)
    worker.is_playing = lambda: worker.playing
    readout = SimpleNamespace(show_record=lambda record, rate: None)

    def panel_failed(_panel, error):
        raise error

    drawer = FrameDrawer([panel], run, worker, SimpleNamespace(refresh=lambda: None), readout,
                         SimpleNamespace(hide=lambda: None), SimpleNamespace(rate=lambda: 0.0), panel_failed,
                         panel, pacer=FramePacer(cpu, MachineLoad(runnable, clock=wall), cores=2, clock=wall),
                         clock=wall)
    drawer.frame_timer.stop()
    return drawer, panel, wall, runnable


def play_for(drawer: FrameDrawer, wall: Clock, seconds: float):
    """`seconds` of the frame timer's ticks, with a new record before each."""
    for _ in range(round(seconds * 1000 / FRAME_POLL_MS)):
        wall.now += FRAME_POLL_MS / 1000
        drawer.dirty = True
        drawer.frame_timer.timeout.emit()


def test_costly_frames_lower_the_frame_rate_to_the_budget_and_cheap_ones_bring_it_back(scene):
    drawer, panel, wall, _ = scene
    panel.cost = 0.002                      # cheap: full rate
    play_for(drawer, wall, 2.0)
    assert drawer.pacer.period == FRAME_PERIOD_S
    assert panel.frames / 2.0 > 0.9 / FRAME_PERIOD_S

    panel.cost = 0.060                      # 60 ms of CPU a frame: nearly two cores at 30 fps
    play_for(drawer, wall, 2.0)             # the running cost settles
    panel.frames = 0
    play_for(drawer, wall, 5.0)
    budget = WINDOW_SHARE * (2 - 1)
    assert drawer.pacer.period == pytest.approx(0.060 / budget, rel=0.05)
    assert panel.frames * panel.cost / 5.0 <= budget * 1.05     # the window's share of a core, within budget
    assert panel.frames / 5.0 < 0.6 / FRAME_PERIOD_S              # well under 30 fps

    panel.cost = 0.002
    play_for(drawer, wall, 2.0)
    assert drawer.pacer.period == FRAME_PERIOD_S


def test_seconds_the_window_spent_away_from_its_frames_do_not_slow_the_frames_after(scene):
    drawer, panel, wall, _ = scene
    panel.cost = 0.002
    play_for(drawer, wall, 1.0)
    panel.cpu.now += 5.0                    # the event loop blocked for 5 s (an export): no frame polled
    wall.now += 5.0
    play_for(drawer, wall, 0.2)
    assert drawer.pacer.period == FRAME_PERIOD_S
    assert drawer.pacer.cost < 0.01


def test_paused_the_window_draws_at_full_rate_whatever_a_frame_costs(scene):
    drawer, panel, wall, _ = scene
    drawer.worker.playing = False
    panel.cost = 0.040
    play_for(drawer, wall, 2.0)
    assert drawer.pacer.period == FRAME_PERIOD_S
    assert panel.frames / 2.0 > 0.9 / FRAME_PERIOD_S


def test_an_engine_in_the_window_s_thread_gets_two_thirds_of_the_interpreter(scene):
    drawer, panel, wall, _ = scene
    drawer.worker.isolated = False
    panel.cost = 0.020
    play_for(drawer, wall, 3.0)
    assert drawer.pacer.period == pytest.approx(0.020 / THREAD_SHARE, rel=0.05)


def test_other_programs_load_lowers_the_frame_rate_until_it_goes(scene):
    drawer, panel, wall, runnable = scene
    panel.cost = 0.010                      # 10 ms a frame: 0.3 of a core at full rate, within WINDOW_SHARE
    play_for(drawer, wall, 2.0)
    assert drawer.pacer.period == FRAME_PERIOD_S
    runnable.now = 2 + OWN_HELPERS + 0.8    # the window, the engine, the app's helpers and 0.8 of a core for others
    play_for(drawer, wall, 4 * LOAD_SMOOTHING_S)   # 0.2 of a core left: the window gets WINDOW_SHARE of it
    assert drawer.pacer.period > 1.5 * FRAME_PERIOD_S
    runnable.now = 4.0                      # no core left
    play_for(drawer, wall, 1.0)
    assert drawer.pacer.period == SLOWEST_FRAME_S
    runnable.now = 2.0
    play_for(drawer, wall, 4 * LOAD_SMOOTHING_S)
    assert drawer.pacer.period == FRAME_PERIOD_S


def test_the_machine_load_follows_runnable_tasks_within_seconds_or_else_the_load_average():
    wall, runnable = Clock(), Clock()
    load = MachineLoad(runnable, average=lambda: 9.0, clock=wall)

    def frames_for(seconds: float) -> float:            # the load read at every frame (30 fps) for `seconds`
        for _ in range(round(seconds / 0.03)):
            wall.now += 0.03
            others = load.others(0.5)
        return others

    runnable.now = 2.0 + OWN_HELPERS        # the window's main thread, the engine and the app's own helpers ...
    assert frames_for(10 * LOAD_SMOOTHING_S) == 0.0      # ... are no other program
    runnable.now = 3.0 + OWN_HELPERS        # a program starts
    assert frames_for(LOAD_SMOOTHING_S) == pytest.approx(1 - math.exp(-1), rel=0.02)   # two thirds of the way
    assert frames_for(10 * LOAD_SMOOTHING_S) == pytest.approx(1.0, rel=0.01)
    fallback = MachineLoad(lambda: None, average=lambda: 2.5, clock=wall)
    assert fallback.others(0.5) == pytest.approx(1.0)            # less the engine and the window's own share


def test_the_frame_period_never_stretches_past_the_slowest():
    cpu = Clock()
    pacer = FramePacer(cpu, load=MachineLoad(lambda: 2.0), cores=2)
    for _ in range(20):
        cpu.now += 1.0                      # a second of CPU a frame
        pacer.frame(playing=True, isolated=True)
    assert pacer.period == SLOWEST_FRAME_S


@pytest.mark.parametrize("isolated, cores, others, budget", [
    (True, 2, 0.0, WINDOW_SHARE),           # the engine has one core, the window WINDOW_SHARE of the other
    (True, 4, 0.0, 3 * WINDOW_SHARE),
    (True, 4, 1.0, 2 * WINDOW_SHARE),       # other programs take a core
    (True, 2, 1.5, 0.0),                    # ... or more than is left
    (True, 1, 0.0, THREAD_SHARE),           # one core for both
    (False, 8, 0.0, THREAD_SHARE),          # one interpreter for both
])
def test_window_budget_while_training(isolated, cores, others, budget):
    assert window_budget(isolated, cores, others) == pytest.approx(budget)
