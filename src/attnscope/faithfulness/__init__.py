"""How faithful attribution methods are, measured (issue 27 item 4; ``attnscope evaluate-attribution``).

:mod:`.stats` (Spearman's ρ, ERASER's comprehensiveness and sufficiency, the bootstrap),
:mod:`.evaluate` (one text: every method against leave-one-out and deletion/insertion),
:mod:`.run` (the texts, the loop, the summary), :mod:`.verdict` (what the numbers show) and
:mod:`.report` (results.json, report.md, curves.png).
"""
