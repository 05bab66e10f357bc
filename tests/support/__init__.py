"""What the tests share: private servers and their fixtures, processes, CLI capture, fake LLMs.

Every helper lives here once; test modules import from here, never from each other.
"""
