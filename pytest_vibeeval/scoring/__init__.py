"""Scoring on the controller: run-wide variables, formulas, repeats, the automatic rubric and
transcripts."""
