"""Environment local: an agent's commands in a subprocess with a timeout, rlimits, truncated output and a scrubbed environment."""
