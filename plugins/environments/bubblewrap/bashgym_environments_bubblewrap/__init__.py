"""Environment bubblewrap: an agent's commands in bwrap (no network, only the workspace writable, own PID namespace), as Claude Code's Linux sandbox."""
