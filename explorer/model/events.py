"""A tiny typed event without Qt (psygnal's `Signal` in miniature): the model emits, views subscribe.

    changed: Event[Config] = Event()
    changed.connect(callback)        # callback(value), called in emit order, in the emitting thread
    changed.emit(config)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Event(Generic[T]):
    """Callbacks called with one value, in the order they connected."""

    def __init__(self):
        self._callbacks: list[Callable[[T], object]] = []

    def connect(self, callback: Callable[[T], object]) -> Callable[[T], object]:
        self._callbacks.append(callback)
        return callback

    def disconnect(self, callback: Callable[[T], object]):
        self._callbacks.remove(callback)

    def emit(self, value: T):
        for callback in list(self._callbacks):
            callback(value)
