"""Files cce reads and writes besides reports: results files, external runs, the event log,
and other benchmarks' files imported as suites (semble)."""
