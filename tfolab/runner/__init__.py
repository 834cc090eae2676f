"""Real runs: a runner process in its own network namespace, and its asyncio client.

Layer 2 of docs/DESIGN.md: imports the model (for ScenarioConfig) and the native
binding, never the UI.
"""
