import pathlib

assert pathlib.Path("answer.txt").read_text() == "done\n"
print("hidden check passed")
