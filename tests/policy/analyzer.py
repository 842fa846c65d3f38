"""Pass registrations through pulumi_policy's own analyzer, the way the CLI does.

The servicer is built from policy/validators.py; policy/__main__.py is never imported
(constructing a PolicyPack starts a gRPC server and blocks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from policy.validators import PACK_NAME, POLICIES
from tests.program.harness import ProgramRun, Registration

LEVELS = {proto.ADVISORY: "advisory", proto.MANDATORY: "mandatory", proto.DISABLED: "disabled"}


@dataclass(frozen=True)
class Verdict:
    policy: str
    level: str
    message: str
    urn: str


def servicer(config: dict[str, Any] | None = None) -> _PolicyAnalyzerServicer:
    analyzer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", POLICIES, EnforcementLevel.MANDATORY)
    if config:
        analyzer.Configure(configure_request(config), None)
    return analyzer


def configure_request(config: dict[str, Any]) -> Any:
    """--policy-pack-config as the engine sends it: one PolicyConfig per policy."""
    levels = {
        "advisory": proto.ADVISORY,
        "mandatory": proto.MANDATORY,
        "disabled": proto.DISABLED,
    }
    policy_config = {}
    for name, value in config.items():
        settings = value if isinstance(value, dict) else {"enforcementLevel": value}
        properties = struct_pb2.Struct()
        properties.update({k: v for k, v in settings.items() if k != "enforcementLevel"})
        policy_config[name] = proto.PolicyConfig(
            enforcementLevel=levels[settings.get("enforcementLevel", "mandatory")],
            properties=properties,
        )
    return proto.ConfigureAnalyzerRequest(policyConfig=policy_config)


def analyze_request(registration: Registration, properties: dict[str, Any] | None = None) -> Any:
    struct = struct_pb2.Struct()
    if properties is None:
        struct.CopyFrom(registration.request.object)
    else:
        json_format.ParseDict(properties, struct)
    return proto.AnalyzeRequest(
        type=registration.type, properties=struct, urn=registration.urn, name=registration.name
    )


def analyze(
    run: ProgramRun,
    config: dict[str, Any] | None = None,
    replace: dict[str, dict[str, Any]] | None = None,
) -> list[Verdict]:
    """Verdicts for every registered resource; `replace` swaps one resource's properties."""
    analyzer = servicer(config)
    verdicts = []
    for registration in run.registrations:
        properties = (replace or {}).get(registration.name)
        response = analyzer.Analyze(analyze_request(registration, properties), None)
        verdicts += [
            Verdict(d.policyName, LEVELS[d.enforcementLevel], _detail(d), d.urn)
            for d in response.diagnostics
        ]
    return verdicts


def _detail(diagnostic: Any) -> str:
    """The violation's own text: the analyzer prefixes the policy's description."""
    prefix = f"{diagnostic.description}\n"
    assert diagnostic.message.startswith(prefix), diagnostic.message
    return str(diagnostic.message[len(prefix) :])


def mandatory(verdicts: list[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.level == "mandatory"]
