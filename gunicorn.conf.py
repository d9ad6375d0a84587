"""gunicorn settings for Holdout: `gunicorn -c gunicorn.conf.py --bind HOST:PORT wsgi:app` (`make run` uses it).

Command-line options and GUNICORN_CMD_ARGS override anything here; WEB_CONCURRENCY sets the worker count.
Put a reverse proxy (nginx) in front in production: it buffers slow uploads, so a sync worker is busy
only while a request is actually being handled (README, "Production").
"""

import os
import shutil
import sys
import tempfile


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may use (containers, taskset)
    except AttributeError:
        return os.cpu_count() or 1


bind = os.environ.get("HOLDOUT_BIND", "127.0.0.1:8000")

# Sync workers: a request validates, scores and stores an upload in milliseconds and is otherwise waiting
# on the database, so 2 per core + 1 keeps the CPUs busy. Capped: every worker holds its own database
# connections, and a dozen per server is plenty behind a proxy.
workers = int(os.environ.get("WEB_CONCURRENCY") or min(2 * _cores() + 1, 12))
worker_class = "sync"

# A worker that does not answer for this long is killed and replaced (uploads are scored in
# milliseconds; the upper bound is a 50 MB file over a slow link when no proxy buffers it).
timeout = 60
# On restart or SIGTERM, requests in flight get this long to finish before their worker is killed.
graceful_timeout = 30
keepalive = 5

# The request line and headers, refused by gunicorn itself (400) before the app sees them: a request line of
# 4 KB (the longest address with its query), 100 header fields of 8 KB each. Bodies are bounded by the app,
# per route, while they are read (app/http/request_limits.py), and by the proxy in front (serving/nginx.conf).
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190

# Replace each worker after a while, so slow growth of a process's memory cannot accumulate (a backstop:
# what a request allocates is freed and given back when it ends, see post_fork and post_request).
max_requests = 2000
max_requests_jitter = 200

# Each worker imports the app itself: no database connection or file handle is shared across a fork,
# and a new deployment's code is picked up by every new worker.
preload_app = False

# Access log to stdout (the service manager collects it); errors to stderr.
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("HOLDOUT_LOG_LEVEL", "info")
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s"'

# The worker heartbeat file is touched constantly; keep it in memory, not on disk.
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"

# gunicorn's control socket defaults to one path per user, which several instances on one host would
# share; off unless a path is given.
control_socket_disable = not os.environ.get("HOLDOUT_CONTROL_SOCKET")
if os.environ.get("HOLDOUT_CONTROL_SOCKET"):
    control_socket = os.environ["HOLDOUT_CONTROL_SOCKET"]

# LOG_FORMAT=json: one JSON object a line (time, method, path, status, duration, remote address).
# serving/ imports nothing of the app, so the master still loads no app code (see preload_app).
_log_format = os.environ.get("LOG_FORMAT", "text").strip().lower() or "text"
if _log_format == "json":
    logger_class = "serving.access_log.JsonLogger"
elif _log_format == "text":
    logger_class = "serving.access_log.TextLogger"  # the same redactions as the JSON lines
else:
    sys.exit(f"holdout: LOG_FORMAT must be text or json, got {os.environ['LOG_FORMAT']!r}")

# Metrics (/metrics) from every worker: prometheus_client's multiprocess mode, where each worker writes its
# samples to files in this folder and a scrape sums them. It must be set before a worker imports the app.
# A folder given by the deployment is emptied at start of all but a live process's files (samples of an earlier
# run would be added in; a `flask worker` sharing it keeps its own); otherwise a private one is made and removed
# at exit.
# (The folder made is remembered in the environment: a reload re-reads this file in the same master.)
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = os.environ["HOLDOUT_METRICS_DIR_MADE"] = tempfile.mkdtemp(
        prefix="holdout-metrics-"
    )


def on_starting(server):
    from serving.metric_files import forget_earlier_runs

    folder = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(folder, exist_ok=True)
    forget_earlier_runs(folder)


def post_fork(server, worker):
    # glibc's allocator set for a worker that handles 50 MB uploads now and then (serving/memory.py): large
    # blocks unmapped when freed, 2 arenas at most. (MALLOC_ARENA_MAX in the environment would come too late:
    # glibc reads it when a process starts, and workers are forked from the master.)
    from serving import memory

    memory.configure()


def post_request(worker, req, environ, resp):
    # After an upload, the free pages of the heaps go back to the system (serving/memory.py).
    from serving import memory

    memory.after_request(environ)


def child_exit(server, worker):
    # The counts of a worker that is gone stay in the sum, folded into one file with those of earlier ones.
    from serving.metric_files import retire_worker

    retire_worker(os.environ["PROMETHEUS_MULTIPROC_DIR"], worker.pid)


def on_exit(server):
    if os.environ.get("HOLDOUT_METRICS_DIR_MADE") == os.environ["PROMETHEUS_MULTIPROC_DIR"]:
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
