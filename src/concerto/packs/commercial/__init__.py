"""Commercial analytics pack (001_*.txt): nine statistics agents over commercial pharma data.

One folder per agent (`causal_impact/`, ... each with `agent`, `reading`, `wording`) over
`base/` (what the agents share: the base class, columns, the built-in data set) and
`methods/` (the statistics, which know nothing of agents). docs/packs/commercial.md has
the layout."""
