"""BashGym judges/code: Code validation columns: ruff for Python, sqlfluff for SQL, bash -n (and shellcheck) for shell."""
