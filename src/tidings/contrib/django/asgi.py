"""The site and tidings' API in one ASGI application, with Django's sign-in as tidings' user::

    # mysite/asgi.py
    import os
    from django.core.asgi import get_asgi_application
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
    django_application = get_asgi_application()
    from tidings.contrib.django.asgi import with_tidings
    application = with_tidings(django_application)   # tidings under /notifications

Requests under the prefix go to tidings (docs/mount.md: its API, event streams, web inbox and
bell script), the rest to Django. A request carrying the site's session cookie is that signed-in
user (``TIDINGS['USER_ID']``'s id), so the site's own pages call ``/notifications/v1/me/…`` with
no token; the server key (``TIDINGS['SETTINGS']['api_keys']`` or ``TIDINGS_API_KEY``) stays the
only way to act as the server.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Mount

from tidings.contrib.django.runtime import get_tidings, user_id


def session_user(request: Request) -> str | None:
    """The tidings id of the Django user whose session cookie ``request`` carries, or None.
    (Sync: FastAPI runs it in a thread, where Django's ORM may be used.)"""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, load_backend
    from django.utils.crypto import constant_time_compare
    from django.utils.module_loading import import_string

    key = request.cookies.get(settings.SESSION_COOKIE_NAME)
    if not key:
        return None
    session = import_string(settings.SESSION_ENGINE + ".SessionStore")(key)
    try:
        pk, backend_path = session[SESSION_KEY], session[BACKEND_SESSION_KEY]
    except KeyError:
        return None
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    user = load_backend(backend_path).get_user(pk)
    if user is None or not user.is_active:
        return None
    # a session from before a password change is no longer the user's (as Django's get_user)
    verify = getattr(user, "get_session_auth_hash", None)
    if verify is not None and not constant_time_compare(session.get(HASH_SESSION_KEY, ""),
                                                        verify()):
        return None
    return user_id(user)


def with_tidings(django_application: Any, *, prefix: str = "/notifications",
                 run_worker: bool = False) -> Starlette:
    """``django_application`` with tidings' API mounted at ``prefix`` (``run_worker``: run the
    job worker in this process too, else ``manage.py tidings_worker`` runs it)."""
    from tidings.api.app import create_app

    tidings = get_tidings()
    config = tidings.config
    api = create_app(tidings, api_keys=config.api_keys, token_secret=config.token_secret,
                     run_worker=run_worker, user_resolver=session_user)
    return Starlette(routes=[Mount(prefix, app=api), Mount("/", app=django_application)],
                     lifespan=api.router.lifespan_context)
