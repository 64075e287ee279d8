"""Bodies shared by several checks (one family each): fetch, evaluate and access written once, parametrised by
the thin check modules in `outpost.checks` that use them.

Kept apart from `outpost.checks` so that package lists only checks, one module per registry row; a family
module is no check of its own (it defines no `CHECK`) and imports no check, so a change to one check cannot
reach its siblings through it.
"""
