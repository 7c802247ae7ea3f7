"""A shell session confined to a task workspace, shared by the environments (being assembled)."""
