"""Drives flagsd's OFREP endpoints with a real OpenFeature client: Python's openfeature-sdk and
openfeature-provider-ofrep (versions pinned in requirements.txt; run through ./run, which makes the venv).

flagsd must serve the namespace of Flags/shop.yaml as its default namespace. Environment:

  OFREP_URL                  flagsd's base URL, e.g. http://127.0.0.1:8080
  SWITCHYARD_CLIENT_TOKEN    a client token for several namespaces (so OFREP uses the default namespace)
  SWITCHYARD_SHOP_TOKEN      a client token limited to namespace shop
  SWITCHYARD_RATE_TOKEN      a client token limited to 3 OFREP requests per minute
  SWITCHYARD_REVOKED_TOKEN   a revoked token

Prints one line per check, `ok <name>` or `FAIL <name>: <what differed>`, and exits 1 when any check failed.
"""

import os
import sys
import traceback
from datetime import datetime, timedelta, timezone

from openfeature import api
from openfeature.evaluation_context import EvaluationContext
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import Reason
from openfeature.contrib.provider.ofrep import OFREPProvider

URL = os.environ["OFREP_URL"]
CLIENT_TOKEN = os.environ["SWITCHYARD_CLIENT_TOKEN"]
SHOP_TOKEN = os.environ["SWITCHYARD_SHOP_TOKEN"]
RATE_TOKEN = os.environ["SWITCHYARD_RATE_TOKEN"]
REVOKED_TOKEN = os.environ["SWITCHYARD_REVOKED_TOKEN"]

failures = []
_domains = 0


def client(headers):
    """An OpenFeature client whose OFREP provider sends these headers (each client its own provider)."""
    global _domains
    _domains += 1
    domain = f"check-{_domains}"
    provider = OFREPProvider(URL, headers_factory=lambda: dict(headers))
    # set_provider initializes the provider on a thread of its own: an evaluation made before that thread runs gets
    # PROVIDER_NOT_READY (seen on a busy machine). Wait for it, as an app would before its first evaluation.
    api.set_provider_and_wait(provider, domain=domain)
    return api.get_client(domain), provider


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def expect(details, value, reason=None, variant=None, error_code=None, value_type=None):
    """Compares evaluation details; returns the differences as text (empty when they match)."""
    problems = []
    if details.value != value or (value_type is not None and type(details.value) is not value_type):
        problems.append(f"value {details.value!r} ({type(details.value).__name__}), expected {value!r}")
    if error_code is not None or details.error_code is not None:
        if details.error_code != error_code:
            problems.append(f"error_code {details.error_code}, expected {error_code} ({details.error_message})")
    if reason is not None and details.reason != reason:
        problems.append(f"reason {details.reason}, expected {reason}")
    if variant is not None and details.variant != variant:
        problems.append(f"variant {details.variant!r}, expected {variant!r}")
    return "; ".join(problems)


def check(name):
    def decorate(function):
        try:
            problem = function()
        except Exception:  # A crash in a check is that check's failure, with its traceback.
            problem = "raised " + traceback.format_exc().strip().replace("\n", "\n    ")
        if problem:
            failures.append(name)
            print(f"FAIL {name}: {problem}", flush=True)
        else:
            print(f"ok {name}", flush=True)
        return function
    return decorate


unit = EvaluationContext(targeting_key="rider-42")
ofrep, _ = client(bearer(CLIENT_TOKEN))


@check("plugin switches are booleans with variant on/off and reason STATIC")
def _():
    on = expect(ofrep.get_boolean_details("plugin_switch_banner", False, unit), True, Reason.STATIC, "on")
    off = expect(ofrep.get_boolean_details("plugin_switch_dark_mode", True, unit), False, Reason.STATIC, "off")
    return "; ".join(p for p in [on, off] if p)


@check("a rule that holds is TARGETING_MATCH; cohorts as a list or a string")
def _():
    problems = []
    for attributes in [{"cohorts": ["staff", "beta"]}, {"cohort": "beta"}]:
        context = EvaluationContext(targeting_key="rider-42", attributes=attributes)
        problems.append(expect(ofrep.get_boolean_details("plugin_switch_beta_search", False, context),
                               True, Reason.TARGETING_MATCH, "on"))
    problems.append(expect(ofrep.get_boolean_details("plugin_switch_beta_search", True, unit), False, Reason.STATIC, "off"))
    return "; ".join(p for p in problems if p)


@check("city, platform and appVersion map to the rule's conditions")
def _():
    paris = EvaluationContext("rider-42", {"city": "paris", "platform": "ios", "appVersion": "5.1.0", "plan": "gold"})
    old = EvaluationContext("rider-42", {"city": "paris", "platform": "ios", "appVersion": "4.2.0"})
    return "; ".join(p for p in [
        expect(ofrep.get_boolean_details("plugin_switch_city_maps", False, paris), True, Reason.TARGETING_MATCH),
        expect(ofrep.get_boolean_details("plugin_switch_city_maps", True, old), False, Reason.STATIC),
    ] if p)


@check("a boolean experiment")
def _():
    return expect(ofrep.get_boolean_details("exp_boolean", False, unit), True, Reason.TARGETING_MATCH, "treatment", value_type=bool)


@check("a string experiment")
def _():
    return expect(ofrep.get_string_details("exp_string", "code default", unit), "Buy now", Reason.TARGETING_MATCH, "bold", value_type=str)


@check("an integer experiment")
def _():
    return expect(ofrep.get_integer_details("exp_integer", 0, unit), 42, Reason.TARGETING_MATCH, "large", value_type=int)


@check("a float experiment")
def _():
    return expect(ofrep.get_float_details("exp_float", 0.0, unit), 2.5, Reason.TARGETING_MATCH, "high", value_type=float)


@check("a float experiment whose value is whole stays a float (1.0, not 1)")
def _():
    details = ofrep.get_float_details("exp_float_whole", 9.5, unit)
    return expect(details, 1.0, Reason.TARGETING_MATCH, "one", value_type=float)


@check("an object experiment, with a whole float inside")
def _():
    details = ofrep.get_object_details("exp_object", {}, unit)
    problem = expect(details, {"color": "blue", "size": 3, "ratio": 1.0, "tags": ["a", "b"]}, Reason.TARGETING_MATCH, "blue")
    if not problem and type(details.value["ratio"]) is not float:
        problem = f"ratio {details.value['ratio']!r} is not a float"
    return problem


@check("a weighted experiment is a SPLIT, the same for the same unit")
def _():
    first = ofrep.get_string_details("exp_split", "code default", unit)
    second = ofrep.get_string_details("exp_split", "code default", unit)
    problems = [expect(first, first.value, Reason.SPLIT)]
    if first.value not in ("Variant A", "Variant B") or {"Variant A": "a", "Variant B": "b"}.get(first.value) != first.variant:
        problems.append(f"value {first.value!r} with variant {first.variant!r}")
    if (second.value, second.variant) != (first.value, first.variant):
        problems.append("a second evaluation differed")
    if not isinstance(first.flag_metadata.get("bucket"), int):
        problems.append(f"metadata {first.flag_metadata} has no bucket")
    return "; ".join(p for p in problems if p)


@check("a killed or disabled plugin switch is a real false with reason DISABLED")
def _():
    killed = ofrep.get_boolean_details("plugin_switch_killed", True, unit)
    problem = expect(killed, False, Reason.DISABLED, "off")
    if not problem and killed.flag_metadata.get("kill_switch") != "kill_legacy":
        problem = f"metadata {killed.flag_metadata} does not name kill_legacy"
    disabled = expect(ofrep.get_boolean_details("plugin_switch_disabled", True, unit), False, Reason.DISABLED, "off")
    return "; ".join(p for p in [problem, disabled] if p)


@check("a killed experiment serves the code default, reason DISABLED, without an error")
def _():
    return expect(ofrep.get_string_details("exp_killed", "my code default", unit),
                  "my code default", Reason.DISABLED, "control")


@check("an unknown flag serves the code default with FLAG_NOT_FOUND")
def _():
    return expect(ofrep.get_boolean_details("plugin_switch_nope", True, unit), True, Reason.ERROR,
                  error_code=ErrorCode.FLAG_NOT_FOUND)


@check("a missing targeting key fails only where a bucket is needed")
def _():
    no_unit = EvaluationContext(attributes={"city": "paris"})
    return "; ".join(p for p in [
        expect(ofrep.get_boolean_details("plugin_switch_half", True, no_unit), True, Reason.ERROR,
               error_code=ErrorCode.TARGETING_KEY_MISSING),
        expect(ofrep.get_string_details("exp_split", "code default", no_unit), "code default", Reason.ERROR,
               error_code=ErrorCode.TARGETING_KEY_MISSING),
        expect(ofrep.get_boolean_details("plugin_switch_banner", False, no_unit), True, Reason.STATIC),
        expect(ofrep.get_boolean_details("plugin_switch_banner", False), True, Reason.STATIC),
        expect(ofrep.get_string_details("exp_string", "code default"), "Buy now", Reason.TARGETING_MATCH),
        expect(ofrep.get_boolean_details("plugin_switch_half", True, unit), ofrep.get_boolean_value("plugin_switch_half", True, unit),
               Reason.SPLIT),
    ] if p)


@check("asking a flag as another type serves the code default with TYPE_MISMATCH")
def _():
    return "; ".join(p for p in [
        expect(ofrep.get_integer_details("exp_string", 7, unit), 7, Reason.ERROR, error_code=ErrorCode.TYPE_MISMATCH),
        expect(ofrep.get_integer_details("exp_float_whole", 7, unit), 7, Reason.ERROR, error_code=ErrorCode.TYPE_MISMATCH),
        expect(ofrep.get_string_details("plugin_switch_banner", "x", unit), "x", Reason.ERROR, error_code=ErrorCode.TYPE_MISMATCH),
    ] if p)


@check("an X-API-Key token works like a bearer token")
def _():
    keyed, _ = client({"X-API-Key": SHOP_TOKEN})
    return expect(keyed.get_boolean_details("plugin_switch_banner", False, unit), True, Reason.STATIC, "on")


@check("bad, revoked and missing credentials serve the code default with an error")
def _():
    problems = []
    for headers in [bearer("sy_client_not_a_token"), {"X-API-Key": "sy_client_not_a_token"}, bearer(REVOKED_TOKEN), {}]:
        refused, _ = client(headers)
        details = refused.get_boolean_details("plugin_switch_banner", False, unit)
        problem = expect(details, False, Reason.ERROR, error_code=ErrorCode.GENERAL)
        if not problem and details.error_message != "unauthorized":
            problem = f"message {details.error_message!r}, expected 'unauthorized' (HTTP 401)"
        if problem:
            problems.append(f"{list(headers) or 'no credentials'}: {problem}")
    return "; ".join(problems)


@check("a token limited to one namespace may not name another")
def _():
    elsewhere, _ = client({"X-API-Key": SHOP_TOKEN, "X-Switchyard-Namespace": "rider"})
    details = elsewhere.get_boolean_details("plugin_switch_banner", False, unit)
    problem = expect(details, False, Reason.ERROR, error_code=ErrorCode.GENERAL)
    if not problem and details.error_message != "forbidden":
        problem = f"message {details.error_message!r}, expected 'forbidden' (HTTP 403)"
    return problem


@check("over its rate a token gets 429; the provider honours Retry-After in whole seconds")
def _():
    limited, provider = client(bearer(RATE_TOKEN))
    problems = []
    for index in range(3):
        problem = expect(limited.get_boolean_details("plugin_switch_banner", False, unit), True, Reason.STATIC)
        if problem:
            problems.append(f"request {index + 1} of 3 allowed: {problem}")
    started = datetime.now(timezone.utc)
    refused = limited.get_boolean_details("plugin_switch_banner", False, unit)
    finished = datetime.now(timezone.utc)
    problem = expect(refused, False, Reason.ERROR, error_code=ErrorCode.GENERAL)
    message = refused.error_message or ""
    if problem or not message.startswith("Rate limited, retry after: "):
        problems.append(f"the 4th request: {problem or message!r}")
    else:
        retry_after = message.removeprefix("Rate limited, retry after: ")
        if not retry_after.isdigit() or not 1 <= int(retry_after) <= 20:
            problems.append(f"Retry-After {retry_after!r} is not whole seconds up to 20 (3 per minute)")
        elif provider.retry_after is None or not (
                started + timedelta(seconds=int(retry_after) - 1) <= provider.retry_after <= finished + timedelta(seconds=int(retry_after) + 1)):
            # The provider counts from the answer's arrival, somewhere between `started` and `finished`.
            problems.append(f"the provider pauses until {provider.retry_after}, not {retry_after} s after the answer "
                            f"(asked at {started}, answered by {finished})")
    paused = limited.get_boolean_details("plugin_switch_banner", False, unit)
    if "paused" not in (paused.error_message or ""):
        problems.append(f"the provider did not pause: {paused.error_message!r}")
    other = expect(ofrep.get_boolean_details("plugin_switch_banner", False, unit), True, Reason.STATIC)
    if other:
        problems.append(f"another token was limited too: {other}")
    return "; ".join(problems)


print(f"{len(failures)} of the checks failed" if failures else "every check passed", flush=True)
sys.exit(1 if failures else 0)
