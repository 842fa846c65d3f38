"""Wire the components of one stack together, after the configuration passed every rule."""

from __future__ import annotations

import pulumi

from components.config.checkpoints import checkpoint_bytes
from components.config.load import ConfigError
from components.config.model import StackConfig
from components.facts import ApiKeyFacts, ServerFacts, server_facts
from components.planner.inputs import GIB
from components.planner.plan import make_plan
from components.render.image import image_tag
from components.render.layout import IMAGE_SIZE_BYTES_ESTIMATE
from components.render.unit import render_unit
from components.resources.api_key import ApiKey, ApiKeyArgs
from components.resources.gpu_host import GpuHost, GpuHostArgs
from components.resources.model_cache import ModelCache, ModelCacheArgs
from components.resources.program_config import ProgramConfig, read_program_config
from components.resources.readiness_gate import ReadinessGate, ReadinessGateArgs
from components.resources.systemd_unit import SystemdUnit, SystemdUnitArgs
from components.resources.vllm_image import VllmImage, VllmImageArgs
from components.resources.vllm_server import VllmServer, VllmServerArgs
from components.rules import LOOPBACK_HOSTS, Violation, evaluate


def deploy() -> None:
    try:
        program = read_program_config()
        facts = server_facts(program.stack, _api_key_facts(program))
        _refuse_or_warn(evaluate(facts))
    except ConfigError as error:
        # A user mistake: a clear message, no traceback.
        raise pulumi.RunError(str(error)) from None
    _declare(program, facts)


def _api_key_facts(program: ProgramConfig) -> ApiKeyFacts:
    if program.api_key is None:
        return ApiKeyFacts(source="generated", stored_as_secret=True)
    return ApiKeyFacts(source="config", stored_as_secret=program.api_key_stored_as_secret)


def _refuse_or_warn(violations: list[Violation]) -> None:
    refused = [f"[{v.policy}] {v.message}" for v in violations if v.mandatory]
    if refused:
        raise ConfigError(refused)
    for violation in violations:
        pulumi.log.warn(f"[{violation.policy}] {violation.message}")


def _declare(program: ProgramConfig, facts: ServerFacts) -> None:
    cfg = program.stack
    assert cfg.host is not None  # checked by read_program_config
    host = GpuHost(
        "gpu-host",
        GpuHostArgs(
            host=cfg.host,
            private_key=program.ssh_private_key,
            gpu_name=cfg.gpu.name,
            need_bytes=_disk_need_bytes(cfg, facts),
            cache_volume=cfg.model.cache_volume,
            image_tag=image_tag(cfg.engine),
        ),
    )
    image = VllmImage("engine-image", VllmImageArgs(engine=cfg.engine, host=host))
    cache = ModelCache("model-cache", ModelCacheArgs(model=cfg.model, host=host, image=image))
    key = ApiKey("api-key", ApiKeyArgs(configured=program.api_key, facts=facts.api_key, host=host))
    server = VllmServer(
        "vllm-server",
        VllmServerArgs(
            facts=facts,
            image=image.image,
            image_tag=image.tag,
            cache_volume=cfg.model.cache_volume,
            provider=host.docker_provider,
            needs=[*cache.downloads, key.env_file],
        ),
    )
    unit = SystemdUnit(
        "qwen38-unit",
        SystemdUnitArgs(
            unit_text=render_unit(cfg),
            host=host,
            generation=pulumi.Output.concat(server.container_id, "/", key.env_file.id),
            needs=[server.container, key.env_file],
        ),
    )
    ReadinessGate("readiness", ReadinessGateArgs(cfg=cfg, host=host, api_key=key.value, unit=unit))
    _export(cfg, facts, key)


def _disk_need_bytes(cfg: StackConfig, facts: ServerFacts) -> int:
    drafter_bytes = int(facts.plan.drafter_weights_gib * GIB)  # 16-bit: disk ~ loaded size
    return checkpoint_bytes(cfg.model.repo) + drafter_bytes + IMAGE_SIZE_BYTES_ESTIMATE


def _export(cfg: StackConfig, facts: ServerFacts, key: ApiKey) -> None:
    plan = make_plan(facts.plan)
    assert cfg.host is not None
    # On a loopback-only server this address is reachable from the host itself (or a tunnel).
    address = cfg.host.address if cfg.serving.host not in LOOPBACK_HOSTS else cfg.serving.host
    pulumi.export("endpoint", f"http://{address}:{cfg.serving.port}/v1")
    pulumi.export("served_model_name", cfg.serving.served_model_name)
    pulumi.export("max_model_len", cfg.serving.max_model_len)
    pulumi.export("api_key", key.value)
    pulumi.export(
        "kv_budget",
        {
            "fits": plan.fits,
            "kv_needed_gib": round(plan.kv_needed_bytes / GIB, 2),
            "available_kv_gib": round(plan.available_kv_bytes / GIB, 2),
            "kv_capacity_tokens": plan.kv_capacity_tokens,
            "max_model_len_fit": plan.max_model_len_fit,
            "estimated": plan.estimated,
        },
    )
