"""The DCMS manager of seed 002 (issue 7): decision logic in algorithm.py."""
