"""Executor claude-cli: headless claude -p with stream-json, mapped to a normalized Trace."""
