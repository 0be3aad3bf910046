"""Min-IP families beyond the single nonnegative head (docs/methods.md §3.9; OPEN-1, OPEN-2,
TT-7): their names and groups (``families``), the models (``models``), the typed jobs (``jobs``)
and the growth table (``growth``)."""
