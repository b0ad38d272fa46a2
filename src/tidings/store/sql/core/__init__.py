"""The SQL store's plumbing: engines and connections, timeouts, driver errors, bulk
statements, migrations."""
