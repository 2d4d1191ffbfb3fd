"""This checkout's development tooling: what ``scripts/`` runs and the test suites use.

Not part of the package: the wheel holds ``dra_metadata`` alone (pyproject.toml), the
sdist carries this directory so that its test suite runs.

- :mod:`devtools.cluster`: the one-node Kubernetes cluster of ``scripts/cluster``
  (docs/cluster.md), which the cluster suite (``tests/e2e``, marker ``cluster``) uses;
- :mod:`devtools.containerd`: containerd's configuration for these machines, the CRI
  suite's and the cluster's;
- :mod:`devtools.podman`: podman's settings for these machines and the Debian root file
  system the images are built on.
"""
