"""``{% load tidings_tags %}{% tidings_bell %}``: the bell for the signed-in user."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html

from tidings.contrib.django.conf import options
from tidings.contrib.django.runtime import mint_token

register = template.Library()


@register.simple_tag(takes_context=True)
def tidings_bell(context: Any, href: str = "") -> str:
    """The ``<tidings-bell>`` web component with a fresh user token and its script, served by
    the tidings server at ``TIDINGS['SERVER_URL']``; nothing for an anonymous visitor."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return ""
    token, _expires = mint_token(user)
    server = options().server_url
    return str(format_html(
        '<tidings-bell api="{}" token="{}" href="{}"></tidings-bell>'
        '<script src="{}/tidings-bell.js" defer></script>',
        server, token, href or f"{server}/#/notifications", server))
