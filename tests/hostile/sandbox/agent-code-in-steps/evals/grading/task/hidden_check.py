import pathlib

import solution

assert solution.answer() == 42
assert pathlib.Path("ran-build").is_file(), "the build step did not run the agent's py_compile.py"
assert pathlib.Path("ran-grade").is_file(), "importing solution.py did not run its code"
print("hidden check passed")
