"""Files cce reads and writes besides reports: results files, external runs and the event log."""
