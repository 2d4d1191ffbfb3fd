"""py.example.com: a complete DRA driver in Python that publishes device metadata.

    python build_stubs.py          # once: the gRPC stubs from the kubelet's .proto files
    python driver.py --node NODE --kubeconfig FILE

What it does, in the order the kubelet sees it:

1. Publishes a ResourceSlice with four example GPUs (``uuid``, and the standard
   ``resource.kubernetes.io/pciBusID`` and ``numaNode``) and keeps it current, as the
   Go slice controller does: it watches the node's slices of this driver; one deleted
   or changed is written again, its pool generation one more; any other is deleted.
2. Registers with the kubelet (plugin registration v1: a socket in the kubelet's
   ``plugins_registry``) and serves ``DRAPlugin`` v1 on a socket of its own.
3. ``NodePrepareResources``: the kubelet names each claim (namespace, name, uid) and no
   more, so the driver reads the claim from the API server; its
   ``status.allocation.devices.results`` say which request got which of our devices.
   Each request's metadata and CDI spec are written with ``MetadataPublisher.prepare``;
   the CDI device IDs go back to the kubelet. ``NodeUnprepareResources`` removes them
   with ``MetadataPublisher.unprepare``. Both are idempotent: the kubelet retries.
4. A later event: when a prepared claim is annotated ``py.example.com/firmware=<v>``
   (standing for a firmware update the driver sees), each of its requests is written
   again in place (``mode="in-place"``), generation 2, so containers already running
   see it through their bind mounts.

Walked through in docs/driver.md ("A driver in Python"). Needs ``dra-metadata`` and
requirements.txt; the stubs come from build_stubs.py.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections import defaultdict
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from kubernetes import client, config, watch

import dra_metadata as dm

DRIVER = "py.example.com"
FIRMWARE_ANNOTATION = f"{DRIVER}/firmware"
STANDARD = "resource.kubernetes.io"
log = logging.getLogger(DRIVER)


# --- the devices ---------------------------------------------------------------------------


def node_devices(node: str) -> dict[str, dict[str, Any]]:
    """This node's devices: name -> attributes, as the slice and the metadata give them."""
    return {
        f"gpu-{i}": {
            "uuid": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}.{DRIVER}/gpu-{i}')}",
            f"{STANDARD}/pciBusID": f"0000:{0xA1 + i:02x}:00.0",
            f"{STANDARD}/numaNode": i // 2,
        }
        for i in range(4)
    }


def wire(value: Any) -> dict[str, Any]:
    """An attribute as a ResourceSlice holds it."""
    if isinstance(value, bool):
        return {"bool": value}
    return {"int": value} if isinstance(value, int) else {"string": value}


def describe(err: Exception) -> str:
    """One line for the kubelet (it shows it in the pod's events): an API error's status
    and message, not its headers and body."""
    if isinstance(err, client.ApiException):
        try:
            message = json.loads(err.body)["message"]
        except (TypeError, ValueError, KeyError):
            message = err.reason
        return f"API server: {err.status} {message}"
    return str(err)


# --- the ResourceSlice ---------------------------------------------------------------------


class Slices:
    """The node's pool, as the Go slice controller keeps it: of the ResourceSlices of this
    driver on this node, one is as it should be and no other stays."""

    def __init__(self, api: client.ResourceV1Api, node: str) -> None:
        self.api, self.node = api, node
        self.name = f"{node}-{DRIVER}"
        self.selector = f"spec.nodeName={node},spec.driver={DRIVER}"
        self.devices = [
            {"name": name, "attributes": {key: wire(v) for key, v in attrs.items()}}
            for name, attrs in node_devices(node).items()
        ]

    def sync(self) -> None:
        """Create the slice, or replace it (pool generation + 1) when it differs; delete
        the node's other slices of this driver (an older version's, say)."""
        raw = self.api.list_resource_slice(field_selector=self.selector, _preload_content=False)
        found: list[dict[str, Any]] = json.loads(raw.data)["items"]
        current = None
        for other in found:
            if other["metadata"]["name"] == self.name:
                current = other
                continue
            try:
                self.api.delete_resource_slice(other["metadata"]["name"])
                log.info("ResourceSlice %s deleted: not this driver's", other["metadata"]["name"])
            except client.ApiException as err:
                if err.status != 404:
                    raise
        generation = 1
        if current is not None:
            spec = current["spec"]
            if spec.get("devices") == self.devices and spec.get("nodeName") == self.node:
                return
            generation = spec["pool"]["generation"] + 1
        body: dict[str, Any] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": self.name},
            "spec": {
                "driver": DRIVER,
                "nodeName": self.node,
                "pool": {"name": self.node, "generation": generation, "resourceSliceCount": 1},
                "devices": self.devices,
            },
        }
        if current is None:
            self.api.create_resource_slice(body)
        else:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            self.api.replace_resource_slice(self.name, body)
        log.info("ResourceSlice %s written, pool generation %d", self.name, generation)

    def keep_current(self, stop: threading.Event) -> None:
        """Sync, then again on every change a watch of the node's slices of this driver
        reports (a slice deleted, changed or added by someone else)."""
        while not stop.is_set():
            try:
                self.sync()
                slices = watch.Watch()
                for _event in slices.stream(
                    self.api.list_resource_slice, field_selector=self.selector, timeout_seconds=60
                ):
                    if stop.is_set():
                        return
                    self.sync()
            except Exception as err:  # the API server may be away for a moment
                log.warning("ResourceSlice %s: %s", self.name, describe(err))
                stop.wait(1)


# --- prepare and unprepare -----------------------------------------------------------------


class Driver:
    """What the kubelet's calls do: read the allocation, publish, answer with CDI IDs."""

    def __init__(self, api: client.ResourceV1Api, node: str, pub: dm.MetadataPublisher,
                 pause_file: str | None = None) -> None:  # fmt: skip
        self.api, self.node, self.pub = api, node, pub
        self.known = node_devices(node)
        self.pause_file = pause_file  # tests only: where a prepare waits to be killed

    def claim_object(self, namespace: str, name: str, uid: str) -> dict[str, Any]:
        """The ResourceClaim as the API server has it, checked to be the one the kubelet means."""
        raw = self.api.read_namespaced_resource_claim(name, namespace, _preload_content=False)
        obj: dict[str, Any] = json.loads(raw.data)
        if obj["metadata"]["uid"] != uid:
            raise RuntimeError(
                f"claim {namespace}/{name} has uid {obj['metadata']['uid']}, not {uid}: "
                "it was deleted and made again"
            )
        return obj

    def allocated(self, obj: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """Our devices in the claim's allocation, by request (``gpu`` or ``gpu/sub``)."""
        allocation = obj.get("status", {}).get("allocation")
        if allocation is None:
            name = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            raise RuntimeError(f"claim {name} is not allocated")
        by_request: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for result in allocation.get("devices", {}).get("results", []):
            if result["driver"] != DRIVER:
                continue  # another driver's device in the same claim
            if result["pool"] != self.node or result["device"] not in self.known:
                raise RuntimeError(f"device {result['pool']}/{result['device']} is not on "
                                   f"node {self.node}")  # fmt: skip
            by_request[result["request"]].append(result)
        return by_request

    def metadata_devices(self, results: list[dict[str, Any]], firmware: str | None
                         ) -> list[dm.Device]:  # fmt: skip
        devices = []
        for result in results:
            attributes = dict(self.known[result["device"]])
            if firmware is not None:
                attributes["firmwareVersion"] = firmware
            devices.append(self.pub.device(result["pool"], result["device"], attributes=attributes))
        return devices

    def prepare(self, namespace: str, name: str, uid: str) -> list[dict[str, Any]]:
        """Publish every request of the claim that has our devices; the kubelet's devices."""
        obj = self.claim_object(namespace, name, uid)
        claim = dm.ClaimRef.from_resource_claim(obj)
        firmware = obj["metadata"].get("annotations", {}).get(FIRMWARE_ANNOTATION)
        answer = []
        for count, (request, results) in enumerate(sorted(self.allocated(obj).items())):
            if count and self.pause_file and os.path.exists(self.pause_file):
                log.info("prepare of %s/%s paused before request %s", namespace, name, request)
                while os.path.exists(self.pause_file):
                    time.sleep(0.1)
            cdi_id = self.pub.prepare(claim, request, self.metadata_devices(results, firmware))
            answer += [
                {"request_names": [request], "pool_name": r["pool"],
                 "device_name": r["device"], "cdi_device_ids": [cdi_id]}
                for r in results
            ]  # fmt: skip
        log.info("prepared %s/%s: %d devices", namespace, name, len(answer))
        return answer

    def unprepare(self, namespace: str, name: str, uid: str) -> None:
        """Remove the claim's files and CDI specs (nothing there is no error)."""
        self.pub.unprepare(dm.ClaimRef(name=name, namespace=namespace, uid=uid))
        log.info("unprepared %s/%s", namespace, name)

    def firmware_changed(self, obj: dict[str, Any]) -> None:
        """Write again, in place, each prepared request whose firmware is not the annotation's."""
        firmware = obj["metadata"].get("annotations", {}).get(FIRMWARE_ANNOTATION)
        claim = dm.ClaimRef.from_resource_claim(obj)
        if firmware is None or not os.path.isdir(self.pub.claim_dir(claim)):
            return  # not annotated, or not prepared on this node
        for request, results in self.allocated(obj).items():
            try:
                current = dm.read_file(self.pub.metadata_path(claim, request))
            except dm.MetadataNotFoundError:
                continue  # unprepared since
            if all(d.attribute("firmwareVersion") == firmware for _, d in current.devices()):
                continue  # already written (by us before a restart, say)
            try:
                md = self.pub.update(claim, request, self.metadata_devices(results, firmware),
                                     mode="in-place")  # fmt: skip
            except dm.MetadataNotFoundError:
                continue  # unprepare won the race
            log.info("updated %s/%s request %s in place: generation %d",
                     claim.namespace, claim.name, request, md.metadata.generation)  # fmt: skip

    def follow_claims(self, stop: threading.Event) -> None:
        """Watch every ResourceClaim; act on the firmware annotation."""
        while not stop.is_set():
            try:
                # (return_type: the client's model of a resource.k8s.io/v1 claim)
                claims = watch.Watch(return_type="ResourceV1ResourceClaim")
                for event in claims.stream(
                    self.api.list_resource_claim_for_all_namespaces, timeout_seconds=60
                ):
                    if event["type"] in ("ADDED", "MODIFIED"):
                        try:
                            self.firmware_changed(event["raw_object"])
                        except Exception as err:
                            log.warning("firmware update: %s", describe(err))
                    if stop.is_set():
                        return
            except Exception as err:  # the API server may be away for a moment
                log.warning("watching claims: %s", describe(err))
                stop.wait(1)


# --- the kubelet's gRPC services -----------------------------------------------------------


def services(driver: Driver, dra_socket: str) -> tuple[Any, Any]:
    """The registration and DRAPlugin v1 servicers, on the stubs build_stubs.py made."""
    from kubelet.dra.v1 import api_pb2 as dra
    from kubelet.dra.v1 import api_pb2_grpc as dra_grpc
    from kubelet.pluginregistration.v1 import api_pb2 as reg
    from kubelet.pluginregistration.v1 import api_pb2_grpc as reg_grpc

    class Registration(reg_grpc.RegistrationServicer):  # type: ignore[misc]
        def GetInfo(self, request: Any, context: Any) -> Any:
            return reg.PluginInfo(type="DRAPlugin", name=DRIVER, endpoint=dra_socket,
                                  supported_versions=["v1.DRAPlugin"])  # fmt: skip

        def NotifyRegistrationStatus(self, request: Any, context: Any) -> Any:
            if request.plugin_registered:
                log.info("registered with the kubelet")
            else:
                log.error("the kubelet refused the registration: %s", request.error)
            return reg.RegistrationStatusResponse()

    class Plugin(dra_grpc.DRAPluginServicer):  # type: ignore[misc]
        def NodePrepareResources(self, request: Any, context: Any) -> Any:
            answers = {}
            for c in request.claims:
                try:
                    devices = [dra.Device(**d) for d in driver.prepare(c.namespace, c.name, c.uid)]
                    answers[c.uid] = dra.NodePrepareResourceResponse(devices=devices)
                except Exception as err:  # the kubelet shows it on the pod and retries
                    log.error("prepare %s/%s: %s", c.namespace, c.name, describe(err))
                    answers[c.uid] = dra.NodePrepareResourceResponse(error=describe(err))
            return dra.NodePrepareResourcesResponse(claims=answers)

        def NodeUnprepareResources(self, request: Any, context: Any) -> Any:
            answers = {}
            for c in request.claims:
                try:
                    driver.unprepare(c.namespace, c.name, c.uid)
                    answers[c.uid] = dra.NodeUnprepareResourceResponse()
                except Exception as err:
                    log.error("unprepare %s/%s: %s", c.namespace, c.name, describe(err))
                    answers[c.uid] = dra.NodeUnprepareResourceResponse(error=describe(err))
            return dra.NodeUnprepareResourcesResponse(claims=answers)

    return (reg_grpc.add_RegistrationServicer_to_server, Registration()), (
        dra_grpc.add_DRAPluginServicer_to_server,
        Plugin(),
    )


def serve(servicer: tuple[Any, Any], socket_path: str) -> grpc.Server:
    """A gRPC server on a Unix socket (a stale one, left by a killed driver, is replaced)."""
    add, implementation = servicer
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    add(implementation, server)
    Path(socket_path).parent.mkdir(parents=True, exist_ok=True)
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    server.add_insecure_port(f"unix://{socket_path}")
    server.start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description="py.example.com, a DRA driver in Python")
    parser.add_argument("--node", required=True, help="this node's name")
    parser.add_argument("--kubeconfig", help="the driver's kubeconfig (default: in-cluster)")
    parser.add_argument("--plugin-dir", default=f"/var/lib/kubelet/plugins/{DRIVER}",
                        help="metadata files and the DRA socket")  # fmt: skip
    parser.add_argument("--registry-dir", default="/var/lib/kubelet/plugins_registry",
                        help="the kubelet's plugin registration directory")  # fmt: skip
    parser.add_argument("--cdi-dir", default="/var/run/cdi", help="where the runtime reads CDI")
    parser.add_argument("--stubs", default=str(Path(__file__).resolve().parent / "_stubs"),
                        help="the directory build_stubs.py wrote")  # fmt: skip
    parser.add_argument("--test-pause-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    sys.path.insert(0, args.stubs)
    if args.kubeconfig:
        config.load_kube_config(config_file=args.kubeconfig)
    else:
        config.load_incluster_config()
    api = client.ResourceV1Api()
    pub = dm.MetadataPublisher(DRIVER, plugin_data_dir=args.plugin_dir, cdi_dir=args.cdi_dir)
    driver = Driver(api, args.node, pub, pause_file=args.test_pause_file)

    stop = threading.Event()
    slices = Slices(api, args.node)
    slices.sync()  # before registering: the scheduler can allocate as soon as the kubelet knows us
    dra_socket = os.path.join(args.plugin_dir, "dra.sock")
    registration, plugin = services(driver, dra_socket)
    servers = [serve(plugin, dra_socket)]
    registration_socket = os.path.join(args.registry_dir, f"{DRIVER}-reg.sock")
    servers.append(serve(registration, registration_socket))  # the kubelet notices it
    threads = [
        threading.Thread(target=slices.keep_current, args=(stop,), daemon=True),
        threading.Thread(target=driver.follow_claims, args=(stop,), daemon=True),
    ]
    for thread in threads:
        thread.start()
    log.info("serving on %s, registered through %s", dra_socket, registration_socket)

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    for server in servers:
        server.stop(grace=5).wait()
    for path in (registration_socket, dra_socket):  # the kubelet unregisters the driver
        if os.path.exists(path):
            os.unlink(path)
    log.info("stopped")


if __name__ == "__main__":
    main()
