"""Commercial analytics pack (001_*.txt): so far its intent table; the nine agents come next."""
