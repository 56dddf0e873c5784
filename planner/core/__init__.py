"""Base layer: the planner's error type, one atomic writer, defaults and input bounds,
the fingerprint a resumed run is checked against, and the execution layer (serial or
Ray) that studies and searches map independent work over."""
