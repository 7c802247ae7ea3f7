"""The orchestrator: a spec becomes a task DAG, run by workers in git worktrees, merged, verified, and every trace becomes data."""
