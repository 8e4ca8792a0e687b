"""pikit's fixture toolset for Hermes (written for pikit; see tools.py).

Enable it in an isolated profile (``pikit runtime init hermes DIR``) and run
Hermes with ``--toolsets pikit_fixture`` and without ``--safe-mode``.
"""

from .tools import TOOLS


def register(ctx):
    for name, schema, handler in TOOLS:
        ctx.register_tool(name=name, toolset="pikit_fixture", schema=schema, handler=handler)
