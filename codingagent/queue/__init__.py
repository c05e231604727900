"""A queue of tasks, one session each: a loop of sessions around the session loop.

The queue's durable file (each task's status, its session, why it stopped) is a record,
``records.queues``; :mod:`.tasks` reads tasks from a file or the settings and sums a queue up
from its sessions; :mod:`.queue_runner` runs the tasks in order, each as one session. Sessions
never know they are in a queue.

May import: ``session`` and every wing below it; never ``sources`` or ``frontends``.
"""
