"""BashGym judges/filter: A DataDesigner processor that drops rows by Jinja conditions and records each dropped row with its reason."""
