"""The core's `concerto` commands, one module each, declared in the core pack
(`concerto/core.py`) and found by `concerto` the way a pack's commands are (`cli.py`):
`ask`, `agents`, `serve`, `config`, `events`.

Heavy libraries (numpy, the model, FastAPI, rich) are imported inside the commands that need
them, so `concerto --help` and structured questions start fast.
"""
