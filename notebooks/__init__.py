"""The tutorial notebooks as package data (``pulsarlab.notebooks``); no code.

``pulsarlab tutorials DIR`` (:mod:`pulsarlab.tutorials`) copies them out of an installed
pulsarlab.
"""
