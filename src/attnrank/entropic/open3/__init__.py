"""OPEN-3, Paper A's open problem (docs/methods.md §2.9): which data-only estimator predicts the
attention-native rank r_attn a softmax teacher needs, from how many sequences, under which
spectra. Its jobs and names (``jobs``), the candidate estimator (``candidate``), the judged tables
(``table``) and the user's tool (``tool``, ``python -m attnrank estimate-rank``)."""
