"""The systemd unit that owns the server container's lifecycle."""

from __future__ import annotations

from components.config.model import StackConfig
from components.render.layout import CONTAINER_NAME

DOCKER = "/usr/bin/docker"


def render_unit(cfg: StackConfig) -> str:
    serving = cfg.serving
    listen = f"{serving.host}:{serving.port}"
    return f"""\
[Unit]
Description=Qwen3.8-27B on 1Cat-vLLM {cfg.engine.version} (OpenAI API on {listen})
Documentation=https://github.com/1CatAI/1Cat-vLLM
Requires=docker.service
After=docker.service network-online.target
Wants=network-online.target
# Loading 20 GiB of weights and profiling takes minutes: allow a few failures per window
# instead of giving up after systemd's default burst.
StartLimitIntervalSec=1800
StartLimitBurst=5

[Service]
Type=simple
# The container is created by the deployment with its full definition; the unit only
# starts it attached (so systemd sees the server's exit status) and stops it.
ExecStart={DOCKER} start --attach {CONTAINER_NAME}
ExecStop={DOCKER} stop --time 30 {CONTAINER_NAME}
Restart=on-failure
RestartSec=15
TimeoutStartSec=120
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
"""
