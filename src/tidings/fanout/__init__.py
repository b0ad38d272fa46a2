"""Fan-out (LiveJournal ESN): plan an event's audience in chunks, deliver each chunk."""
