"""Pure domain code: no I/O, no imports from the adapters."""
