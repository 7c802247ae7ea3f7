"""A parsing worker (`python -m bashgym_sources_claude_code._worker`; see parallel.py). Its own
module: running parallel.py itself as `__main__` would import it twice (the package imports
it), and the package's import would then hold another copy of its functions."""

from bashgym_sources_claude_code.parallel import serve

serve()
