"""Paths within the app, whether it is served at the root or mounted under a prefix of
another ASGI application (``host.mount("/notifications", tidings_app)``).

Starlette's ``Mount`` leaves the whole path in ``scope["path"]`` and puts the prefix in
``scope["root_path"]``; the app's own checks of a path (the JSON API's ``/v1``, the docs'
pages, the unsubscribe form) look at what follows the prefix."""

from __future__ import annotations

from starlette.types import Scope


def route_path(scope: Scope) -> str:
    """The request's path with the prefix the app is mounted under taken off."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path
