"""The science both papers share: the vectorized trainer, rank estimators, seeding, table and
array I/O, statistics, and the bases of claims and figures. Imports nothing of the wings, the
pipeline or publishing."""

# The studies, one wing each, in the order every listing (claims, figures) follows: paper B's
# Min-IP task, paper A, paper A's appendix B on real text.
WINGS = ("minip", "entropic", "language")
