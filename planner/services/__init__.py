"""Several models on one fleet and one budget (``planner plan --fleet``; docs/fleet.md).

``spec`` reads fleet files; ``solve`` builds one planning context per service and
solves the joint MILP (:mod:`planner.outer.joint`) and the best independent split;
``promise`` holds every service to the single-model closed loop and chooses the answer;
``run``, ``report`` and ``export`` write the fleet's run folder, report and launch files.
"""
