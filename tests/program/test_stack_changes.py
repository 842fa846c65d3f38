"""What a change of profile touches, and that an unchanged stack registers the same inputs."""

from __future__ import annotations

from tests.program.harness import ProgramRun, Registration, run_program

# A context change must never rebuild the image, re-download 19 GB or rotate the key.
UNTOUCHED_BY_CONTEXT = (
    "gpu-host-docker",
    "gpu-host-preflight",
    "engine-image-build",
    "model-cache-volume",
    "model-cache-download-0",
    "api-key-generated",
    "api-key-env-file",
)


def by_name(run: ProgramRun) -> dict[str, Registration]:
    return {r.name: r for r in run.registrations if r.type != "pulumi:pulumi:Stack"}


def test_context_change_keeps_image_model_and_key(ctx180k: ProgramRun, ctx256k: ProgramRun) -> None:
    before, after = by_name(ctx180k), by_name(ctx256k)
    for name in UNTOUCHED_BY_CONTEXT:
        assert before[name].properties == after[name].properties, f"{name} would change"


def test_context_change_changes_the_server(ctx180k: ProgramRun, ctx256k: ProgramRun) -> None:
    before, after = by_name(ctx180k), by_name(ctx256k)
    assert before["vllm-server-container"].properties != after["vllm-server-container"].properties
    assert before["vllm-server"].properties != after["vllm-server"].properties


def test_a_new_container_restarts_the_unit(ctx180k: ProgramRun) -> None:
    """The unit's command line carries the container id: a replaced container (what a
    context change makes) changes it, and that re-runs install-unit --restart."""
    install = by_name(ctx180k)["qwen38-unit-install"]
    container = by_name(ctx180k)["vllm-server-container"]
    env_file = by_name(ctx180k)["api-key-env-file"]
    create_deps = set(install.request.propertyDependencies["create"].urns)
    assert {container.urn, env_file.urn} <= create_deps, "restart must follow container and key"
    assert "--restart" in install.plain["create"]


def test_changed_names_between_profiles_are_only_server_unit_and_check(
    ctx180k: ProgramRun, ctx256k: ProgramRun
) -> None:
    before, after = by_name(ctx180k), by_name(ctx256k)
    changed = sorted(n for n in before if before[n].properties != after[n].properties)
    assert changed == ["readiness-from-here", "vllm-server", "vllm-server-container"], changed


def test_an_unchanged_stack_registers_identical_inputs() -> None:
    """Two runs of one stack must not differ: a second preview shows no changes."""
    first, second = by_name(run_program("ctx180k")), by_name(run_program("ctx180k"))
    assert first.keys() == second.keys()
    for name, registration in first.items():
        assert registration.properties == second[name].properties, f"{name} differs between runs"


def test_engine_bump_rebuilds_the_image_but_keeps_the_cache_volume() -> None:
    old = by_name(run_program("ctx180k"))
    new = by_name(run_program("ctx180k", {"engine.version": "1.5.0"}))
    assert old["engine-image-build"].properties != new["engine-image-build"].properties
    assert old["model-cache-volume"].properties == new["model-cache-volume"].properties
