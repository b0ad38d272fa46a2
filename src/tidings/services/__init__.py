"""Services: the engine's logic, each over the ports it needs (no SQL, no HTTP)."""
