"""Scale-out: agents' work on a Ray cluster (`CONCERTO_EXECUTOR=ray`); see docs/scale-out.md."""
