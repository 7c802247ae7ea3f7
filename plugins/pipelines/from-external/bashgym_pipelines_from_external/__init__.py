"""BashGym pipelines/from-external: Instruction/response rows generated from any source's rows through a column mapping, judged."""
