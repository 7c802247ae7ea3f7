"""Executor student: BashGym's own small tool loop over any model alias (embedded, vLLM, OpenAI-compatible, litellm)."""
