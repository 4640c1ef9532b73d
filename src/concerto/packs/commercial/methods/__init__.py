"""The commercial pack's statistics, which know nothing of agents.

A method takes plain inputs (numpy arrays, pandas frames, dataclasses, numbers and strings)
and returns plain results (dataclasses, arrays, numbers); it raises `errors.MethodError` (or
a subclass) for inputs it cannot answer from, and the agent layer turns that into the
contract's error.
Nothing here imports any of Concerto outside `methods/`: not `concerto.agents`, not
`concerto.contracts`, not the pack's base or agents (tests/packs/commercial/test_layout.py
checks it). One module per subject:

- `causal`: average treatment effects (regression adjustment, IPW, doubly robust AIPW),
  the propensity model, overlap, the treatment's 0/1 coding, the backdoor set of a graph;
  `causal_refute`: placebo, random common cause and subset refutations; `causal_dowhy`: the
  optional DoWhy path;
- `cate`: segment effects by a cross-fitted DR-learner (optional EconML);
- `decompose`: gaps to potential with bootstrap intervals, and volume / mix / rate changes;
- `power`: power analysis and the baseline an experiment is sized from;
- `forecast`: ETS, ARIMA and trend regression, backtested and combined;
- `response_curves`: saturating spend curves and the allocation at equal marginal return;
- `drift`: PSI with KS and chi-square tests between two periods;
- `model_error`: a ridge model's error on a later period against its cross-validated error.
"""
