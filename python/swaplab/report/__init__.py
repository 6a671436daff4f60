"""``swaplab report``: one self-contained HTML page (inline SVG) of the plots people look at
for reclaim, from a run, a sweep, a reproduce or a compare result; the same plots as PNGs on
request.

sources.py recognises the input and builds a Report of sections (from_run.py, from_sweep.py,
from_reproduce.py, from_compare.py), made of figure specifications (figures.py) that svg.py
draws into the page (html.py) and png.py draws with matplotlib.
"""
