"""Verified CSV-analysis Q&A episodes: sandboxed teacher runs, triangulated by majority vote."""
