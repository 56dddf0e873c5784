"""The run folder: what ``planner plan`` writes and every later command reads.

* :mod:`~planner.run.plan_json` -- a solved plan as the plan.json dict;
* :mod:`~planner.run.schema` -- that dict's schema check, dump and load;
* :mod:`~planner.run.files` -- publishing a folder of files atomically;
* :mod:`~planner.run.simulations` -- the index of simulation results in the folder.

It sits below the simulator and the plan (both produce plan dicts and the simulated
objective consumes them) and above the searches whose results it serialises.
"""
