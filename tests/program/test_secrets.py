"""The SSH key and the API key stay Pulumi secrets end to end, and out of every plain input."""

from __future__ import annotations

from tests.program.harness import (
    TEST_SSH_KEY,
    ProgramRun,
    is_secret,
    plain_strings,
    run_program,
)

GENERATED_KEY = "generated-test-key-0123456789"  # what the mocked RandomPassword returns
CONFIGURED_KEY = "sk-configured-test-key-abcdef"


def remote_commands(run: ProgramRun) -> list:
    return run.of_type("command:remote:Command")


def test_every_remote_command_gets_the_ssh_key_as_a_secret(ctx180k: ProgramRun) -> None:
    commands = remote_commands(ctx180k)
    assert len(commands) >= 4
    for command in commands:
        connection = command.properties["connection"]
        assert is_secret(connection) or is_secret(connection.get("privateKey")), (
            f"{command.name}: the SSH private key must be a secret"
        )


def test_the_generated_key_is_secret_where_it_is_used(ctx180k: ProgramRun) -> None:
    env_file = ctx180k.one("command:remote:Command", "api-key-env-file")
    assert is_secret(env_file.properties["stdin"]), "the key goes to the host as secret stdin"
    assert env_file.plain["stdin"] == GENERATED_KEY
    readiness = ctx180k.one("command:local:Command", "readiness-from-here")
    assert is_secret(readiness.properties["stdin"])


def test_no_key_in_any_plain_input(any_stack: tuple[str, ProgramRun]) -> None:
    stack, run = any_stack
    for registration in run.registrations:
        for text in plain_strings(registration.properties):
            assert GENERATED_KEY not in text, f"{stack}: key in plain input of {registration.name}"
            assert TEST_SSH_KEY not in text, (
                f"{stack}: SSH key in plain input of {registration.name}"
            )


def test_a_configured_key_is_used_and_never_plain() -> None:
    run = run_program("ctx180k", {"api_key": CONFIGURED_KEY}, extra_secret_keys=("qwen38:api_key",))
    assert not run.of_type("random:index/randomPassword:RandomPassword"), "no key is generated"
    env_file = run.one("command:remote:Command", "api-key-env-file")
    assert env_file.plain["stdin"] == CONFIGURED_KEY
    for registration in run.registrations:
        for text in plain_strings(registration.properties):
            assert CONFIGURED_KEY not in text, (
                f"configured key in plain input of {registration.name}"
            )


def test_the_key_is_no_argument_of_any_command(ctx180k: ProgramRun) -> None:
    for registration in ctx180k.registrations:
        for field in ("create", "update", "delete"):
            command = registration.plain.get(field) or ""
            assert GENERATED_KEY not in command, f"{registration.name}.{field} carries the key"


def test_api_key_stack_output_is_secret(ctx180k: ProgramRun) -> None:
    from tests.program.harness import stack_output_is_secret

    assert stack_output_is_secret(ctx180k, "api_key")
