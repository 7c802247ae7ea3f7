"""`python -m bashgym`: the `bashgym` command, from whichever installed distribution provides
it (bashgym-cli, installed with the kernel); the kernel imports no front end by name."""

from importlib.metadata import entry_points

scripts = entry_points(group="console_scripts", name="bashgym")
if not scripts:
    raise SystemExit("no `bashgym` command is installed: pip install bashgym-cli")
next(iter(scripts)).load()()
