"""McpToolset against the MCP conformance suite (npm @modelcontextprotocol/conformance,
installed under peers/ by scripts/test.sh).

For each client scenario the suite starts a mock MCP server (and authorization servers),
runs tests/mcp/client/conformance_client.py against it and checks what the server saw. Scenarios
run two at a time (one per core: the whole suite takes about two minutes here), except
``sse-retry``, which times the client's reconnection and runs alone.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import NODE, PEERS, ROOT

CONFORMANCE = PEERS / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = ROOT / "tests" / "mcp" / "client" / "conformance_client.py"

CLIENT_TIMEOUT_MS = 90_000
"""How long the suite lets the client run per scenario (the client gives up after 60 s)."""
SCENARIO_TIMEOUT = 150.0
"""Seconds for one whole scenario run (the suite's own start-up and teardown included)."""
WORKERS = 2
"""Scenarios run at once: one per core; more and the mock servers' timings get flaky."""
ALONE = ("sse-retry",)
"""Scenarios that time the client (reconnect after the server's ``retry`` delay) and so
run with nothing else going on."""

ISSUE_SCENARIOS = (
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
)
"""The 26 client scenarios of suite 0.1.16, the ones the issue asks for (the last was
called ``auth/cross-app-access-complete-flow`` there). We run 0.2.0-alpha.12: 0.1.16's
mock of the 2025-03-26 back-compat scenario served authorization server metadata naming
another issuer, which RFC 8414 section 3.3 forbids using (the SDK rightly refused it);
the mock was fixed in 0.2.0-alpha.7 (modelcontextprotocol/conformance#359)."""

NEWER_SCENARIOS = (
    "request-metadata",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
    "auth/wif-jwt-bearer",
    "sep-2322-client-request-state",
)
"""Scenarios added after 0.1.16 that we pass too. ``auth/wif-jwt-bearer`` (workload
identity federation, SEP-1933) with `WorkloadIdentity`; ``sep-2322-client-request-state``
since a result without ``resultType`` is read as complete, as the spec says (the SDK's
2026-07-28 schema requires the field)."""

PASSING = ISSUE_SCENARIOS + NEWER_SCENARIOS
"""Every scenario we pass: a regression in any of them fails the test."""

SKIPPED_BY_SUITE = (
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
)
"""Skills (SEP-2640, an extension for hosts that load skills): the suite skips every
check for a client that has none."""

KNOWN_GAPS = {
    "auth/dpop": "sep-1932-client-token-request-proof",
    "auth/dpop-nonce": "sep-1932-client-token-request-proof",
}
"""Scenarios we fail, each with the line that shows why: DPoP (SEP-1932, RFC 9449), an
optional auth extension that the `mcp` SDK's OAuth client (2.3) cannot carry, so our
client sends no proof and presents its token as ``Bearer``. The SDK's ``OAuthToken``
takes only ``token_type`` "Bearer" (a DPoP-bound token response fails validation); its
providers build the token request and set ``Authorization: Bearer`` themselves, with no
hook to add a ``DPoP`` proof header, choose the scheme or answer a ``use_dpop_nonce``
challenge; and its ``TokenStorage`` has no place for the key a token is bound to. Doing
it over the SDK would mean rewriting the token responses it parses and the headers it
writes, i.e. re-implementing its OAuth client (making the proofs is not the problem: a
JOSE library does that). When one starts passing, the test says so: move it to
NEWER_SCENARIOS."""

SUMMARY = re.compile(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings")
LISTED = re.compile(r"^\s+- (\S+) \[", re.MULTILINE)

# The first test also runs the whole suite (the module's fixture): 1-2 minutes here, more
# than the project's per-test default when the machine is busy. Each run is bounded anyway.
pytestmark = pytest.mark.timeout(600)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """One scenario's run, as the suite reported it."""

    scenario: str
    exit_code: int
    passed: int
    checks: int
    failed: int
    warnings: int
    output: str

    @property
    def ok(self) -> bool:
        """The suite's verdict: every check passed, no warning, the client exited in time."""
        return self.exit_code == 0 and "OVERALL: PASSED" in self.output

    def __str__(self) -> str:
        tail = "\n".join(self.output.splitlines()[-60:])
        return (
            f"{self.scenario}: exit {self.exit_code}, {self.passed}/{self.checks} passed, "
            f"{self.failed} failed, {self.warnings} warnings\n{tail}"
        )


def conformance(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    # Node 22 from peers/ (the suite needs fs.globSync); the machine's node may be older.
    for path in (NODE, CONFORMANCE):
        assert path.exists(), f"{path} is missing: run scripts/test.sh to install peers/"
    return subprocess.run(
        [str(NODE), str(CONFORMANCE), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )


def run_scenario(scenario: str, output_dir: Path) -> Outcome:
    command = shlex.join([sys.executable, str(CLIENT)])
    done = conformance(
        "client",
        "--command",
        command,
        "--scenario",
        scenario,
        "--timeout",
        str(CLIENT_TIMEOUT_MS),
        "-o",
        str(output_dir),
        timeout=SCENARIO_TIMEOUT,
    )
    output = done.stdout + done.stderr
    summary = SUMMARY.search(output)
    assert summary is not None, f"no result line for {scenario}:\n{output}"
    passed, checks, failed, warnings = (int(n) for n in summary.groups())
    return Outcome(
        scenario=scenario,
        exit_code=done.returncode,
        passed=passed,
        checks=checks,
        failed=failed,
        warnings=warnings,
        output=output,
    )


@pytest.fixture(scope="module")
def scenarios() -> list[str]:
    """The client scenarios this version of the suite has."""
    done = conformance("list", "--client", timeout=60)
    assert done.returncode == 0, done.stderr
    return LISTED.findall(done.stdout)


@pytest.fixture(scope="module")
def outcomes(scenarios: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every scenario, run once for the module."""
    output_dir = tmp_path_factory.mktemp("conformance")
    results = {name: run_scenario(name, output_dir) for name in scenarios if name in ALONE}
    rest = [name for name in scenarios if name not in ALONE]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for outcome in pool.map(lambda name: run_scenario(name, output_dir), rest):
            results[outcome.scenario] = outcome
    return results


def test_the_suite_has_the_client_scenarios_we_know(scenarios: list[str]) -> None:
    assert sorted(scenarios) == sorted((*PASSING, *SKIPPED_BY_SUITE, *KNOWN_GAPS))


@pytest.mark.parametrize("scenario", PASSING)
def test_the_client_passes_the_scenario(scenario: str, outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[scenario]
    assert outcome.ok, str(outcome)
    assert outcome.failed == outcome.warnings == 0, str(outcome)
    assert outcome.passed == outcome.checks > 0, str(outcome)


@pytest.mark.parametrize("scenario", SKIPPED_BY_SUITE)
def test_the_suite_skips_the_skills_scenarios(scenario: str, outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[scenario]
    assert outcome.ok, str(outcome)
    assert outcome.checks == 0, str(outcome)
    assert "SKIPPED" in outcome.output, str(outcome)


@pytest.mark.parametrize("scenario", sorted(KNOWN_GAPS))
def test_the_known_gaps_fail_for_their_known_reason(
    scenario: str, outcomes: dict[str, Outcome]
) -> None:
    outcome = outcomes[scenario]
    assert not outcome.ok, f"{scenario} passes now: move it to NEWER_SCENARIOS\n{outcome}"
    assert KNOWN_GAPS[scenario] in outcome.output, str(outcome)
