"""bashgym-designer: the NeMo DataDesigner toolkit BashGym's plugins share (the `datadesigner`
runner, the pipelines, the judges and the pipeline commands), so none imports another's
internals. Import from the submodules; this package imports nothing (DataDesigner's plugin
discovery loads `filters` and `validation` while `data_designer.config` is itself importing).

Its API, by submodule:
- `designer`: the one place DataDesigner is driven: `prepare_environment` (offline, quiet),
  `make_designer`, `generate` (one `create()` into a run dir, a `Generation`), `seed_frame`,
  `route_logs`, `PLACEHOLDER_PROVIDER`, and why rows were lost: `failure_reason`,
  `task_failures`, `all_rows_dropped`.
- `rounds`: one round of a pipeline's generation with every row accounted for (the engine runs
  the rounds, `bashgym_work_rounds`): `generate_round`, `assemble` (the builder a round generates
  from, which `preview`/`validate` check too), `account`.
- `drops`: how processors report the rows they drop: `record_drops`, `read_drops`, `DROPS_DIR`.
- `failures`, `faults`, `seeding`, `constrain`: the raw answers of failed rows, model faults
  DataDesigner mishandles, `--seed` for its samplers, constrained decoding (`base_alias`).
- `models`: a run's `bashgym.contracts.Model` as DataDesigner wants it: `model_config`,
  `model_provider`, `providers_for`, `MissingKeyError`.
- `settings`: the `[designer]` settings table (`DesignerSettings`, `designer_settings`).
- `filters`: the `bashgym-filter` processor (a DataDesigner plugin) dropping rows that fail
  Jinja keep rules, each drop recorded: `FilterRule`, `add_filter`, `filter_processor`.
- `rubrics`: LLM-as-judge rubrics with int scores and keep thresholds: `Rubric`, `Criterion`,
  `RUBRICS`/`get_rubric`, `judge_column`, `threshold_rules`, `total_score_expr`, `scores_of`,
  `resolve_thresholds`, and for judged pipelines `add_rubric_judge`, `JudgedPipelineOptions`,
  `thresholds_field`, `writer_builder`, `ensure_model`.
- `validation`: the `bashgym-code-validation` column (a DataDesigner plugin: ruff, sqlfluff,
  `bash -n`/shellcheck): `add_validation`, `valid_rule`, `CodeCheck`, `normalize_language`,
  `strip_fence`, `tool_name`, `CodeValidationColumnConfig`.
"""
