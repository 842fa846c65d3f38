"""What each stack registers: the components, their children, the order on the host."""

from __future__ import annotations

from tests.program.harness import ProgramRun, Registration

COMPONENTS = {
    "qwen38:host:GpuHost": "gpu-host",
    "qwen38:image:VllmImage": "engine-image",
    "qwen38:model:ModelCache": "model-cache",
    "qwen38:secrets:ApiKey": "api-key",
    "qwen38:server:VllmServer": "vllm-server",
    "qwen38:systemd:SystemdUnit": "qwen38-unit",
    "qwen38:readiness:ReadinessGate": "readiness",
}

# child resource name -> (type, parent component name)
CHILDREN = {
    "gpu-host-docker": ("pulumi:providers:docker", "gpu-host"),
    "gpu-host-preflight": ("command:remote:Command", "gpu-host"),
    "engine-image-build": ("docker:index/image:Image", "engine-image"),
    "model-cache-volume": ("docker:index/volume:Volume", "model-cache"),
    "model-cache-download-0": ("command:remote:Command", "model-cache"),
    "api-key-generated": ("random:index/randomPassword:RandomPassword", "api-key"),
    "api-key-env-file": ("command:remote:Command", "api-key"),
    "vllm-server-container": ("docker:index/container:Container", "vllm-server"),
    "qwen38-unit-install": ("command:remote:Command", "qwen38-unit"),
    "readiness-from-here": ("command:local:Command", "readiness"),
}


def named(run: ProgramRun, name: str) -> Registration:
    found = [r for r in run.registrations if r.name == name]
    assert len(found) == 1, f"expected one resource named {name}, got {len(found)}"
    return found[0]


def test_the_seven_components_are_registered(any_stack: tuple[str, ProgramRun]) -> None:
    _, run = any_stack
    for type_, name in COMPONENTS.items():
        assert run.one(type_, name).custom is False, f"{type_} should be a component"


def test_every_child_is_parented_to_its_component(ctx180k: ProgramRun) -> None:
    for child, (type_, parent_name) in CHILDREN.items():
        registration = named(ctx180k, child)
        assert registration.type == type_, f"{child}: type {registration.type}"
        parent = ctx180k.by_urn(registration.parent)
        assert parent.name == parent_name, f"{child}: parent {parent.name}, expected {parent_name}"


def test_nothing_is_left_unaccounted(ctx180k: ProgramRun) -> None:
    names = {r.name for r in ctx180k.registrations if r.type != "pulumi:pulumi:Stack"}
    assert names == set(COMPONENTS.values()) | set(CHILDREN), f"unexpected: {sorted(names)}"


def depends_on(run: ProgramRun, name: str, on: str) -> bool:
    """True when `name` waits for `on`, directly or through its parent components."""
    target = named(run, on).urn
    seen: set[str] = set()
    todo = [named(run, name)]
    while todo:
        current = todo.pop()
        if current.urn in seen:
            continue
        seen.add(current.urn)
        deps = set(current.dependencies)
        for values in current.request.propertyDependencies.values():
            deps |= set(values.urns)
        if target in deps:
            return True
        todo += [run.by_urn(urn) for urn in deps if any(r.urn == urn for r in run.registrations)]
    return False


def test_preflight_comes_before_everything_on_the_host(ctx180k: ProgramRun) -> None:
    for name in ("engine-image-build", "model-cache-download-0", "api-key-env-file"):
        assert depends_on(ctx180k, name, "gpu-host-preflight"), f"{name} must wait for preflight"


def test_image_model_and_key_come_before_the_server(ctx180k: ProgramRun) -> None:
    for needed in ("engine-image-build", "model-cache-download-0", "api-key-env-file"):
        assert depends_on(ctx180k, "vllm-server-container", needed), (
            f"server must wait for {needed}"
        )


def test_the_download_runs_in_the_built_image(ctx180k: ProgramRun) -> None:
    assert depends_on(ctx180k, "model-cache-download-0", "engine-image-build")


def test_server_before_unit_before_readiness(ctx180k: ProgramRun) -> None:
    assert depends_on(ctx180k, "qwen38-unit-install", "vllm-server-container")
    assert depends_on(ctx180k, "readiness-from-here", "qwen38-unit-install")


def test_docker_resources_use_the_ssh_provider(ctx180k: ProgramRun) -> None:
    provider = named(ctx180k, "gpu-host-docker")
    assert provider.plain["host"] == "ssh://root@192.0.2.10:22"
    for name in ("engine-image-build", "model-cache-volume", "vllm-server-container"):
        reference = named(ctx180k, name).request.provider
        assert reference.startswith(provider.urn), f"{name} must use the ssh:// Docker provider"


def test_model_cache_survives_destroy_by_default(ctx180k: ProgramRun) -> None:
    assert named(ctx180k, "model-cache-volume").request.retainOnDelete is True


def test_model_cache_can_opt_in_to_deletion() -> None:
    from tests.program.harness import run_program

    run = run_program("ctx180k", {"model.delete_cache_on_destroy": True})
    assert named(run, "model-cache-volume").request.retainOnDelete is False


def test_drafter_is_downloaded_too_when_configured() -> None:
    from tests.program.harness import run_program

    drafter = {
        "repo": "incoai/Qwen3.8-27B-DFlash2",
        "revision": "dedf8df68adfb1afeaf7b7480c0a0243108177b4",
    }
    # Two V100s: the drafter fits next to the target with tensor parallelism.
    run = run_program(
        "dev",
        {"model.drafter": drafter, "gpu.count": 2, "serving.tensor_parallel_size": 2},
    )
    create = named(run, "model-cache-download-1").plain["create"]
    assert "incoai/Qwen3.8-27B-DFlash2" in create and drafter["revision"] in create


def test_stack_outputs(ctx180k: ProgramRun) -> None:
    outputs = ctx180k.outputs
    assert set(outputs) == {
        "endpoint",
        "served_model_name",
        "max_model_len",
        "api_key",
        "kv_budget",
    }
