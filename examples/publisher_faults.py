"""What a Python driver's publisher does when the node is not as it left it.

Three faults a driver meets on a node, each with real files and processes, and
what :class:`~dra_metadata.MetadataPublisher` makes of them (docs/driver.md,
"When things go wrong"):

1. another process holds a claim's lock and does not let go (a hung call, or a
   child that inherited it): the call waits ``lock_timeout`` seconds, then fails
   with a :class:`~dra_metadata.PublishError` naming the lock file and the holder;
2. the claim's state file is damaged (a disk error, a hand edit): ``prepare()``
   goes on above the generation of the file on disk, and ``unprepare()`` removes
   the claim whatever the state holds;
3. a second copy of the driver, with another plugin data directory, writes to the
   same CDI directory: its ``prepare()`` of a claim the first one holds is
   refused, and the first one's spec is kept;
4. a directory where the publisher writes a temporary file (a tool run as root
   made it): ``prepare()`` refuses with the command that removes it,
   ``unprepare()`` removes everything else and names it with the same command;
   run, the command clears it for good;
5. Ctrl-C while a call waits for a lock: the wait ends at once with
   ``KeyboardInterrupt``, holding nothing, and the next call takes the claim.

Every failure is a ``PublishError``: a driver returns its message as the claim's
error, and the kubelet retries. Run ``python examples/publisher_faults.py [DIR]``
(``DIR`` plays the node, default a temporary directory).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import dra_metadata as dm

DRIVER = "gpu.example.com"
CLAIM = dm.ClaimRef(name="trainer-0-gpu", namespace="ml", uid="c7e7a1b2")

#: A process that takes a lock file and keeps it until its stdin closes.
HOLD = (
    "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); "
    "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()"
)


def main(node: str) -> None:
    pub = dm.MetadataPublisher(
        DRIVER,
        plugin_data_dir=os.path.join(node, "plugins", DRIVER),
        cdi_dir=os.path.join(node, "cdi"),
        lock_timeout=1,  # a driver keeps the default (30 s); one second is enough to see it
    )
    gpu = pub.device("worker-0", "gpu-0", attributes={"uuid": "GPU-8f6c2a4e"})
    pub.prepare(CLAIM, "gpu", [gpu])

    # 1: a lock nobody lets go of.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, pub.lock_path(CLAIM)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "locked\n"
    try:
        pub.update(CLAIM, "gpu", [gpu])
    except dm.PublishError as err:
        named = f"{pub.lock_path(CLAIM)}: still locked" in str(err)
        named = named and f"held by process {holder.pid} " in str(err)
        print("1. lock held elsewhere:", "names the lock and its holder" if named else err)
    finally:
        holder.communicate("")  # the holder ends: the next call goes through

    # 2: a damaged state file.
    with open(pub.state_path(CLAIM), "wb") as state:
        state.write(b'{"requests": {"gpu": {"generation": 1e400}}}')
    pub.prepare(CLAIM, "gpu", [gpu])  # the kubelet prepares again
    generation = dm.read_file(pub.metadata_path(CLAIM, "gpu")).metadata.generation
    print(f"2. damaged state: prepare went on above the file's generation: {generation}")

    # 3: a second publisher of the driver on the same CDI directory.
    rival = dm.MetadataPublisher(
        DRIVER,
        plugin_data_dir=os.path.join(node, "other-plugins", DRIVER),
        cdi_dir=os.path.join(node, "cdi"),
    )
    try:
        rival.prepare(CLAIM, "gpu", [rival.device("worker-0", "gpu-0")])
    except dm.PublishError as err:
        print("3. second publisher:", "refused" if "another publisher" in str(err) else err)

    # 4: a directory where the CDI spec's temporary file goes.
    spec = pub.cdi_spec_path(CLAIM, "gpu")
    planted = os.path.join(os.path.dirname(spec), f".{os.path.basename(spec)}.tmp")
    os.makedirs(os.path.join(planted, "inside"))
    fixes: list[str] = []
    for call in (lambda: pub.prepare(CLAIM, "gpu", [gpu]), lambda: pub.unprepare(CLAIM)):
        try:
            call()
        except dm.PublishError as err:
            fixes.extend(re.findall(r"\((rm -r [^)]*)\)", str(err)))
    same = len(fixes) == 2 and fixes[0] == fixes[1]
    print("4. planted directory: both calls name it with", "one fix" if same else fixes)
    subprocess.run(["sh", "-c", fixes[0]], check=True)
    pub.prepare(CLAIM, "gpu", [gpu])
    generation = dm.read_file(pub.metadata_path(CLAIM, "gpu")).metadata.generation
    print(f"   after the fix, prepared again at generation {generation}")

    # 5: Ctrl-C while a call waits for the claim's lock.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, pub.lock_path(CLAIM)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "locked\n"
    patient = dm.MetadataPublisher(
        DRIVER, plugin_data_dir=pub.plugin_data_dir, cdi_dir=pub.cdi_dir, lock_timeout=30
    )
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    try:
        patient.update(CLAIM, "gpu", [gpu])
    except KeyboardInterrupt:
        waited = time.monotonic() - started
        print("5. Ctrl-C in a wait of 30 s:", "ends it at once" if waited < 5 else waited)
    finally:
        holder.communicate("")
    generation = patient.update(CLAIM, "gpu", [gpu]).metadata.generation
    print(f"   the next update takes the claim: generation {generation}")

    pub.unprepare(CLAIM)
    files = [name for _, _, names in os.walk(node) for name in names]
    print(f"   after unprepare, files on the node: {files}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(scratch)
