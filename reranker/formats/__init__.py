"""The files stages exchange: one reader and one writer per format, owned by no stage.

Stages import from here (and from config, hardware, models, java), never from each other.
"""
