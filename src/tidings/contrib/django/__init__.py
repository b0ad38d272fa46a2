"""tidings in a Django project: ``pip install 'tidings[django]'``, then::

    INSTALLED_APPS = [..., "tidings.contrib.django"]
    TIDINGS = {"TYPES_FILE": BASE_DIR / "tidings.toml", "TOKEN_SECRET": env("TIDINGS_TOKEN_SECRET")}

Publish from the site's code with :func:`publish` (after the transaction commits) or
declaratively with :class:`Notify`; ``manage.py migrate`` migrates tidings' own database too;
``manage.py tidings_worker`` runs its jobs; ``{% load tidings_tags %}{% tidings_bell %}`` shows the
bell; deleting a user removes their tidings data. See docs/django.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Notify", "erase_user", "get_tidings", "mint_token", "publish", "retract", "user_id",
           "username"]

if TYPE_CHECKING:
    from tidings.contrib.django.erase import erase_user
    from tidings.contrib.django.notify import Notify, publish, retract
    from tidings.contrib.django.runtime import get_tidings, mint_token, user_id, username

_WHERE = {"Notify": "notify", "publish": "notify", "retract": "notify", "erase_user": "erase",
          "get_tidings": "runtime", "mint_token": "runtime", "user_id": "runtime",
          "username": "runtime"}


def __getattr__(name: str) -> Any:
    # loaded on first use: Django imports this package while its app registry is not ready
    if name in _WHERE:
        from importlib import import_module
        return getattr(import_module(f"tidings.contrib.django.{_WHERE[name]}"), name)
    raise AttributeError(name)
