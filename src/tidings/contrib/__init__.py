"""Integrations of tidings with other frameworks (each an optional extra)."""
