"""Child processes: how they start, are supervised, limited and stopped."""
