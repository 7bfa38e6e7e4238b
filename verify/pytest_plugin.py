"""The layoutproof pytest plugin (entry point ``pytest11``): theorem-style tests over layouts.

Its contents arrive with the testing kit; loading it costs nothing.
"""
