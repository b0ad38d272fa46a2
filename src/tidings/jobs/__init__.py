"""Reliable jobs in the store (TheSchwartz semantics) and the worker that runs them."""
