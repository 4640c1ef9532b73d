"""Built-in agent packs, one folder per specification; each registers through the entry points."""
