"""The HTTP API v1 (FastAPI): the contract of ``API.md``, served by ``tidings serve``."""
