"""EXAMPLE PROBLEM: the public tests, visible to the agent in its workspace."""

import unittest

from slugify import slugify


class PublicTests(unittest.TestCase):
    def test_words(self) -> None:
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation(self) -> None:
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_outer_spaces(self) -> None:
        self.assertEqual(slugify("  Spaces  around  "), "spaces-around")


if __name__ == "__main__":
    unittest.main()
