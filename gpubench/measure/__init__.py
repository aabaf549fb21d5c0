"""How a point is timed: the clock protocol, telemetry, statistics, modes, power state."""
