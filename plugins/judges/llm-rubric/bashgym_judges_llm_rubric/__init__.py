"""BashGym judges/llm-rubric: Named LLM-as-judge rubrics with int scores and keep thresholds, reusable by any pipeline."""
