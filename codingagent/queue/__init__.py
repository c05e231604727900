"""A queue of tasks, one session each: a loop of sessions around the session loop.

:mod:`.tasks` keeps the queue's durable file (each task's status, its session, why it
stopped); :mod:`.queue_runner` runs the tasks in order, each as one session, and sums them up.
Sessions never know they are in a queue.

May import: ``session`` and every wing below it; never ``sources`` or ``frontends``.
"""
