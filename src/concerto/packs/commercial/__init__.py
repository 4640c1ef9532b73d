"""Commercial analytics pack (001_*.txt): nine statistics agents over commercial pharma data."""
