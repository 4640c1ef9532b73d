"""`python -m concerto.mcp MODULE:FACTORY [--transport stdio|http]`: see `concerto.mcp.serve`."""

from concerto.mcp.serve import main

main()
