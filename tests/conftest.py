"""Test-session settings: W&B is disabled unless a test turns it on (no run directories or
background processes from every `arborist train` a test runs)."""
import os

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("WANDB_SILENT", "true")
