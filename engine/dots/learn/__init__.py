"""Learning Dots-and-Boxes evaluations from exact values.

``data`` (the command ``python -m boxfish.engine.dots.learn.data``): positions of three
sources with the exact value of the position and of every legal move, solved by the engine's
untimed search, appended to resumable files outside the repository; ``store`` (the files'
format); ``sources`` (the positions: the two random-play generators and engine self-play).
Import the modules themselves: this package imports nothing.
"""
