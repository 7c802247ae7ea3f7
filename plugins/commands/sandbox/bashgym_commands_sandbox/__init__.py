"""bashgym sandbox run: one command the way an agent's would run, with its exit code, output and why it stopped."""
