"""The planning context: what the user asked (``PlanRequest``), the context it builds
(``PlanningContext``), the layout evaluator, SLO feasibility, where islands are placed,
their operating points and the accounting every plan must pass."""
