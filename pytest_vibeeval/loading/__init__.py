"""Reading the input files: YAML with line numbers, ${VAR} and {{template}} values, suites,
configurations and unified-runner folders."""
