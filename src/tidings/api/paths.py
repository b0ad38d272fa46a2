"""Paths within the app, whether it is served at the root or mounted under a prefix of
another ASGI application (``host.mount("/notifications", tidings_app)``).

Starlette's ``Mount`` leaves the whole path in ``scope["path"]`` and puts the prefix in
``scope["root_path"]``; the app's own checks of a path (the JSON API's ``/v1``, the docs'
pages, the unsubscribe form) look at what follows the prefix."""

from __future__ import annotations

from starlette.types import Scope

ROOT = "tidings.root_path"  # where the app keeps its own prefix in the scope


def keep_root(scope: Scope) -> None:
    """Note the app's prefix as the request enters it: a mount inside the app (its static
    files) adds its own part to ``root_path`` for what it serves."""
    scope[ROOT] = scope.get("root_path", "")


def app_root(scope: Scope) -> str:
    """The prefix the app is mounted under, without a trailing slash ("" at the root)."""
    root: str = scope.get(ROOT, scope.get("root_path", ""))
    return root.rstrip("/")


def route_path(scope: Scope) -> str:
    """The request's path with the prefix the app is mounted under taken off."""
    path: str = scope["path"]
    root = app_root(scope)
    return path[len(root):] if root and path.startswith(root) else path
