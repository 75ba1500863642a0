"""The framework the ports import: ``FRAMEWORK=devito`` or ``stencilgen`` (the default)."""
import importlib
import os

api = importlib.import_module(os.environ.get("FRAMEWORK", "stencilgen"))
