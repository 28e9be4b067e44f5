"""The container engine `make image-test` runs the image with: Docker where an engine answers, else
podman (with this project's containers.conf, see that file), and a pod's settings as its flags."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
Obj = dict[str, Any]


@dataclass(frozen=True)
class Engine:
    """`docker` or `podman`, with the environment its commands need here."""

    binary: str
    env: Mapping[str, str]

    @classmethod
    def find(cls, work_dir: Path) -> Engine:
        """Docker when `docker info` answers (as tests/image/build.sh decides), else podman."""
        docker = shutil.which("docker")
        if docker and subprocess.run([docker, "info"], capture_output=True).returncode == 0:
            return cls(docker, dict(os.environ))
        podman = shutil.which("podman")
        if podman is None:
            raise RuntimeError(
                "no Docker engine and no podman: apt-get install podman buildah runc debootstrap"
            )
        conf = work_dir / "containers.conf"
        conf.write_text(containers_conf())
        return cls(podman, {**os.environ, "CONTAINERS_CONF": str(conf)})

    @property
    def is_podman(self) -> bool:
        return Path(self.binary).name == "podman"

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run `ENGINE ARGS...` to completion; output captured, no check."""
        return subprocess.run(
            [self.binary, *args],
            capture_output=True,
            text=True,
            env=dict(self.env),
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def inspect_image(self, image: str) -> Obj:
        """The image's inspect document (Config holds User, Entrypoint, Labels, Env...)."""
        result = self.run("image", "inspect", image)
        if result.returncode != 0:
            raise RuntimeError(f"{self.binary} image inspect {image}: {result.stderr.strip()}")
        documents: list[Obj] = json.loads(result.stdout)
        return documents[0]

    def read_only_flags(self) -> list[str]:
        """A read-only root with no writable path of the engine's own making (podman adds
        tmpfs mounts on /tmp, /var/tmp and /run to --read-only unless told not to)."""
        flags = ["--read-only"]
        if self.is_podman:
            flags.append("--read-only-tmpfs=false")
        return flags


def containers_conf() -> str:
    """tests/image/containers.conf with this machine's hard limits filled in."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    cap = 32768
    return (
        (HERE / "containers.conf")
        .read_text()
        .replace("@NOFILE@", str(cap if nofile == resource.RLIM_INFINITY else nofile))
        .replace("@NPROC@", str(cap if nproc == resource.RLIM_INFINITY else min(nproc, cap)))
    )


@dataclass
class PodContainer:
    """One container of a Deployment's pod template, as `ENGINE run` flags.

    What the kubelet would do for this container, where this machine can: the image's entry
    point with the manifest's args, its env (fieldRefs resolved to the given pod name and
    namespace), its securityContext (user, group, read-only root, dropped capabilities, no
    privilege escalation), its emptyDir volumes as tmpfs, configMap volumes from `config_dirs`,
    the ServiceAccount's token directory, and KUBERNETES_SERVICE_HOST/_PORT. The network is the
    host's: the listening ports of `ports` (containerPort -> host port) replace those in args.
    """

    pod_spec: Obj
    container: Obj
    pod_name: str
    namespace: str
    config_dirs: Mapping[str, Path]
    service_account_dir: Path
    api_host: str
    api_port: int
    ports: Mapping[int, int]
    extra_env: Mapping[str, str] = field(default_factory=dict)
    pod_uid: str = field(default_factory=lambda: str(uuid.uuid4()))

    def args(self) -> list[str]:
        """The manifest's args with every containerPort replaced by its host port."""
        out = []
        for arg in self.container.get("args", []):
            flag, sep, value = str(arg).partition("=")
            for container_port, host_port in self.ports.items():
                if value == str(container_port):
                    value = str(host_port)
                elif value.endswith(f":{container_port}"):
                    value = value[: -len(str(container_port))] + str(host_port)
            out.append(flag + sep + value)
        return out

    def env(self) -> dict[str, str]:
        """The container's env as the kubelet sets it (fieldRefs resolved, service env added)."""
        fields = {
            "metadata.name": self.pod_name,
            "metadata.namespace": self.namespace,
            "metadata.uid": self.pod_uid,
            "spec.serviceAccountName": str(self.pod_spec.get("serviceAccountName", "default")),
            # host networking: the pod's address is the host's loopback
            "status.podIP": "127.0.0.1",
        }
        env = {
            "KUBERNETES_SERVICE_HOST": self.api_host,
            "KUBERNETES_SERVICE_PORT": str(self.api_port),
        }
        for item in self.container.get("env", []):
            if "value" in item:
                env[item["name"]] = str(item["value"])
                continue
            path = item.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            if path not in fields:
                raise ValueError(
                    f"env {item['name']}: valueFrom {item.get('valueFrom')} unsupported"
                )
            env[item["name"]] = fields[path]
        env.update(self.extra_env)
        return env

    def security_flags(self, engine: Engine) -> list[str]:
        """The pod's and container's securityContext as flags (the container's wins)."""
        context = {
            **self.pod_spec.get("securityContext", {}),
            **self.container.get("securityContext", {}),
        }
        flags = []
        if "runAsUser" in context:
            group = context.get("runAsGroup", context["runAsUser"])
            flags.append(f"--user={context['runAsUser']}:{group}")
        if "fsGroup" in self.pod_spec.get("securityContext", {}):
            flags.append(f"--group-add={self.pod_spec['securityContext']['fsGroup']}")
        if context.get("readOnlyRootFilesystem"):
            flags += engine.read_only_flags()
        if context.get("allowPrivilegeEscalation") is False:
            flags.append("--security-opt=no-new-privileges")
        for cap in context.get("capabilities", {}).get("drop", []):
            flags.append(f"--cap-drop={cap}")
        if context.get("privileged"):
            flags.append("--privileged")
        return flags

    def volume_flags(self) -> list[str]:
        """Each volumeMount from its volume: emptyDir as tmpfs, configMap from config_dirs."""
        volumes = {v["name"]: v for v in self.pod_spec.get("volumes", [])}
        flags = [f"--volume={self.service_account_dir}:{SERVICE_ACCOUNT_MOUNT}:ro"]
        for mount in self.container.get("volumeMounts", []):
            volume = volumes[mount["name"]]
            target = mount["mountPath"]
            if "emptyDir" in volume:
                size = volume["emptyDir"].get("sizeLimit", "64Mi").removesuffix("i").lower()
                flags.append(f"--tmpfs={target}:rw,size={size},mode=1777")
            elif "configMap" in volume:
                source = self.config_dirs[volume["configMap"]["name"]]
                flags.append(f"--volume={source}:{target}:ro")
            else:
                raise ValueError(
                    f"volume {mount['name']}: only emptyDir and configMap are emulated"
                )
        return flags

    def hostname_flags(self, engine: Engine) -> list[str]:
        """The kubelet names a pod's host after the pod; podman can with the host's network
        (Docker may refuse --hostname with --network=host, so there the host's name stays)."""
        return [f"--hostname={self.pod_name}"] if engine.is_podman else []

    def run_flags(self, engine: Engine, name: str, image: str) -> list[str]:
        """`ENGINE run` arguments for a detached container named `name`."""
        env = [f"--env={key}={value}" for key, value in self.env().items()]
        return [
            "run",
            "--detach",
            f"--name={name}",
            *self.hostname_flags(engine),
            "--network=host",
            *self.security_flags(engine),
            *self.volume_flags(),
            *env,
            image,
            *self.args(),
        ]


SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def write_service_account(
    directory: Path, token: str, ca_pem: str, namespace: str, gid: int
) -> Path:
    """The files the kubelet mounts at SERVICE_ACCOUNT_MOUNT, readable by the pod's fsGroup."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in (("token", token), ("ca.crt", ca_pem), ("namespace", namespace)):
        path = directory / name
        path.write_text(text)
        os.chmod(path, 0o640)
        if os.geteuid() == 0:
            os.chown(path, 0, gid)
        else:
            os.chmod(path, 0o644)
    os.chmod(directory, 0o755)
    return directory


def container_logs(engine: Engine, name: str) -> str:
    """The container's output, for failure messages."""
    result = engine.run("logs", name)
    return (result.stdout + result.stderr)[-6000:]


def remove_containers(engine: Engine, names: Sequence[str]) -> None:
    """Stop (SIGTERM, 10 s grace) and remove the named containers."""
    for name in names:
        engine.run("stop", "--time=10", name)
        engine.run("rm", "--force", name)
