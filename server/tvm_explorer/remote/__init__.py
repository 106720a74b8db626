"""Measuring on remote devices through TVM's RPC: a server or a tracker's pool (docs/costs.md,
"Measuring on devices")."""
