"""EXAMPLE PROBLEM: the hidden tests, copied in only after the agent has exited."""

import unittest

from slugify import slugify


class HiddenTests(unittest.TestCase):
    def test_accents(self) -> None:
        self.assertEqual(slugify("Crème Brûlée"), "creme-brulee")

    def test_digits_and_dots(self) -> None:
        self.assertEqual(slugify("Python 3.12 Release"), "python-3-12-release")

    def test_repeated_separators(self) -> None:
        self.assertEqual(slugify("--a -- b--"), "a-b")

    def test_nothing_left(self) -> None:
        self.assertEqual(slugify("!!!"), "")
        self.assertEqual(slugify(""), "")


if __name__ == "__main__":
    unittest.main()
