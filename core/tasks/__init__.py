"""The tasks a network can learn; ``make_task(config)`` builds the one ``config.task`` names."""
from __future__ import annotations

from collections.abc import Callable

from gradflow.core.config import Config
from gradflow.core.tasks.adding import AddingTask
from gradflow.core.tasks.base import Batch, RunFn, Task
from gradflow.core.tasks.copy import CopyTask
from gradflow.core.tasks.recall import RecallTask
from gradflow.core.tasks.sine import SineTask
from gradflow.core.tasks.text import TextTask

TASKS: dict[str, Callable[[Config], Task]] = {"adding": AddingTask, "copy": CopyTask, "recall": RecallTask, "sine": SineTask, "text": TextTask}


def make_task(config: Config) -> Task:
    """The task for ``config.task``, seeded from ``config.data_stream_seed``."""
    return TASKS[config.task](config)


__all__ = ["Task", "Batch", "RunFn", "TASKS", "make_task", "AddingTask", "CopyTask", "RecallTask", "SineTask", "TextTask"]
