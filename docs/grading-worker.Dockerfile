# A worker image for grading on Dask (docs/grading.md, "Grading across machines"):
#   docker build -f docs/grading-worker.Dockerfile -t labkit-grade-worker .
#   docker run --rm --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#       --security-opt systempaths=unconfined --cpus 2 labkit-grade-worker tcp://SCHEDULER:8786
# Every worker and the machine running `labkit grade --scheduler` need the same labkit (and the
# same --exercise-module files at the same paths): build the client's environment from this
# image too, or install the same checkout. Not built or run by this repository's tests.
FROM python:3.12-slim

# bubblewrap is the sandbox; prlimit and setpriv come with util-linux
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap util-linux \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/labkit
COPY pyproject.toml README.md ./
COPY labkit ./labkit
RUN pip install --no-cache-dir ".[cluster]" \
    && python -m compileall -q /usr/local/lib/python3.12/site-packages/labkit

# not root: bwrap then maps the grader to uid 65534 in a user namespace (the container's
# seccomp/AppArmor profile must allow that: see the docker run options above)
RUN useradd --create-home grader
USER grader
WORKDIR /home/grader

# one submission at a time per worker: one thread, the resource every grading task needs
ENTRYPOINT ["dask", "worker", "--nthreads", "1", "--resources", "grade=1", "--no-dashboard"]
