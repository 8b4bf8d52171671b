"""The official Kubernetes Python client against our apiserver: create, list, watch (resuming
from a resourceVersion) and delete ConfigMaps and Pods.

Usage: python client_e2e.py KUBECONFIG
Prints one progress line per step and `OK` at the end; any failed check raises.
"""

import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "py-e2e"


def step(text):
    print(text, flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_api_error(status, reason, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as err:
        check(err.status == status, f"expected HTTP {status}, got {err.status}: {err.body}")
        check(f'"reason":"{reason}"' in err.body.replace(" ", ""), f"expected {reason}: {err.body}")
        return
    raise AssertionError(f"{fn.__name__} succeeded, expected HTTP {status}")


def collect(func, rv, wanted, timeout=20, **kwargs):
    """Watches func from resourceVersion rv until `wanted` events came; returns them as
    (type, name, resourceVersion)."""
    events = []
    w = watch.Watch()
    deadline = time.monotonic() + timeout
    for event in w.stream(func, resource_version=rv, timeout_seconds=timeout, **kwargs):
        obj = event["object"]
        events.append((event["type"], obj.metadata.name, int(obj.metadata.resource_version)))
        if len(events) >= wanted or time.monotonic() > deadline:
            w.stop()
            break
    return events


def configmap(name, value):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels={"app": "py"}),
        data={"value": value},
    )


def main(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()

    # Namespace
    ns = v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    check(ns.metadata.name == NS and ns.metadata.uid, f"namespace: {ns}")
    check(v1.read_namespace(NS).status.phase == "Active", "namespace not Active")
    step("namespace created")

    # ConfigMaps: create, read, conflict on duplicate, list with a label selector.
    created = [v1.create_namespaced_config_map(NS, configmap(f"cm-{i}", str(i))) for i in range(5)]
    rvs = [int(cm.metadata.resource_version) for cm in created]
    check(rvs == sorted(rvs) and len(set(rvs)) == 5, f"create resourceVersions {rvs}")
    check(v1.read_namespaced_config_map("cm-3", NS).data == {"value": "3"}, "read cm-3")
    expect_api_error(409, "AlreadyExists", v1.create_namespaced_config_map, NS, configmap("cm-0", "x"))
    listed = v1.list_namespaced_config_map(NS, label_selector="app=py")
    names = sorted(cm.metadata.name for cm in listed.items)
    check(names == [f"cm-{i}" for i in range(5)], f"list names {names}")
    list_rv = listed.metadata.resource_version
    check(int(list_rv) >= rvs[-1], f"list resourceVersion {list_rv} below {rvs[-1]}")
    check(
        len(v1.list_config_map_for_all_namespaces(label_selector="app=py").items) == 5,
        "list across namespaces",
    )
    check(v1.list_namespaced_config_map(NS, label_selector="app=other").items == [], "empty selector")
    step("configmaps created and listed")

    # Changes after the list, then a watch resuming from the list's resourceVersion replays
    # exactly them, in order.
    v1.create_namespaced_config_map(NS, configmap("cm-5", "5"))
    v1.patch_namespaced_config_map("cm-0", NS, {"data": {"value": "zero"}})
    v1.delete_namespaced_config_map("cm-1", NS)
    events = collect(v1.list_namespaced_config_map, list_rv, 3, namespace=NS)
    check(
        [(t, n) for t, n, _ in events] == [("ADDED", "cm-5"), ("MODIFIED", "cm-0"), ("DELETED", "cm-1")],
        f"resumed watch events {events}",
    )
    event_rvs = [rv for _, _, rv in events]
    check(event_rvs == sorted(event_rvs) and event_rvs[0] > int(list_rv), f"event rvs {event_rvs}")
    step("watch resumed from the list resourceVersion")

    # Resuming from the last event's resourceVersion: nothing old again, only a change made
    # while watching.
    def later():
        time.sleep(0.5)
        v1.create_namespaced_config_map(NS, configmap("cm-6", "6"))

    writer = threading.Thread(target=later)
    writer.start()
    events = collect(v1.list_namespaced_config_map, str(event_rvs[-1]), 1, namespace=NS)
    writer.join()
    check([(t, n) for t, n, _ in events] == [("ADDED", "cm-6")], f"live watch events {events}")
    step("watch resumed from an event resourceVersion")

    # Pods: create, read, list by field selector, watch the deletion.
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p1", labels={"app": "py"}),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="main", image="busybox:1.36", command=["sleep", "3600"])]
        ),
    )
    created_pod = v1.create_namespaced_pod(NS, pod)
    check(created_pod.status.phase == "Pending", f"pod phase {created_pod.status.phase}")
    check(created_pod.spec.restart_policy == "Always", "pod defaults")
    check(v1.read_namespaced_pod("p1", NS).spec.containers[0].image == "busybox:1.36", "read pod")
    pods = v1.list_namespaced_pod(NS, field_selector="metadata.name=p1")
    check([p.metadata.name for p in pods.items] == ["p1"], "pod by field selector")
    check(v1.list_namespaced_pod(NS, field_selector="metadata.name=nope").items == [], "no pod")
    expect_api_error(404, "NotFound", v1.read_namespaced_pod, "nope", NS)
    v1.delete_namespaced_pod("p1", NS, grace_period_seconds=0)
    events = collect(v1.list_namespaced_pod, pods.metadata.resource_version, 1, namespace=NS)
    check([(t, n) for t, n, _ in events] == [("DELETED", "p1")], f"pod watch events {events}")
    expect_api_error(404, "NotFound", v1.read_namespaced_pod, "p1", NS)
    step("pod created, listed, watched and deleted")

    # Delete the ConfigMaps: one by one and as a collection.
    v1.delete_namespaced_config_map("cm-2", NS)
    expect_api_error(404, "NotFound", v1.read_namespaced_config_map, "cm-2", NS)
    v1.delete_collection_namespaced_config_map(NS, label_selector="app=py")
    left = v1.list_namespaced_config_map(NS).items
    check(left == [], f"configmaps left: {[cm.metadata.name for cm in left]}")
    step("configmaps deleted")
    print("OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
