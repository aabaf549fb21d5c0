"""Views of saved runs and comparisons, siblings over the same table writers: tables.py (tables as data; rich
and Markdown), run.py (a run's tables and CSV), compare.py (a comparison's tables, Markdown and JSON), plot.py
(images). Views read the results model and the comparison's report; nothing below them imports a view."""
