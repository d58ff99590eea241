"""The tasks a network can learn; ``make_task(config)`` builds the one ``config.task`` names."""
from __future__ import annotations

from core.config import Config
from core.tasks.adding import AddingTask
from core.tasks.base import Batch, RunFn, Task
from core.tasks.copy import CopyTask
from core.tasks.sine import SineTask
from core.tasks.text import TextTask

TASKS: dict[str, type[Task]] = {"adding": AddingTask, "copy": CopyTask, "sine": SineTask, "text": TextTask}


def make_task(config: Config) -> Task:
    """The task for ``config.task``, seeded from ``config.seed``."""
    return TASKS[config.task](config)


__all__ = ["Task", "Batch", "RunFn", "TASKS", "make_task", "AddingTask", "CopyTask", "SineTask", "TextTask"]
