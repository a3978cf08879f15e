"""The suite's plumbing: configuration, settings, flags, registries, hardware, Java, run headers (layer 1)."""
