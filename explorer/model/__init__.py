"""The app's state without Qt (napari's ViewerModel in small): windows observe it and send it intents."""
from gradflow.explorer.model.app import DISCARD_ASK_STEPS, AppModel, Engine
from gradflow.explorer.model.events import Event
from gradflow.explorer.model.tour import MIN_LEG_SECONDS, ShownStop, TourModel, stops_of

__all__ = ["AppModel", "DISCARD_ASK_STEPS", "Engine", "Event", "MIN_LEG_SECONDS", "ShownStop", "TourModel",
           "stops_of"]
