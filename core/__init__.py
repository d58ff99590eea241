"""The engine: torch + numpy, never Qt. Trains a recurrent model one optimizer step at a time and records
what happens inside every time step (gradflow.core.trainer.Trainer)."""
