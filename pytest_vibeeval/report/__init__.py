"""What a session writes and prints, rendered from records: the Run Summary, the results file, JUnit
properties, the HTML report, baselines and history."""
