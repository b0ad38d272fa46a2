"""``path("tidings/", include("tidings.contrib.django.urls"))``."""

from __future__ import annotations

from django.urls import path

from tidings.contrib.django import views

app_name = "tidings"
urlpatterns = [path("token", views.token, name="token")]
