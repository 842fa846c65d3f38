"""Qwen3.8-27B on one V100 through 1Cat-vLLM: read the stack config, refuse what cannot
work, then declare the host, image, model cache, key, server, unit and readiness gate."""

from components.resources.stack import deploy

deploy()
