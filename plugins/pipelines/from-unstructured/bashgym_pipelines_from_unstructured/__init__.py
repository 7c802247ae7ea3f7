"""BashGym pipelines/from-unstructured: Grounded question/answer rows from document chunks, judged for groundedness."""
