"""Drives flagsd's web console in a real browser: Debian's chromium, headless, through Debian's chromedriver and
Selenium (pinned in requirements.txt; run through ./run, which makes the venv and finds the browser).

flagsd must serve namespace `rider` seeded from Flags/rider.yaml, plus the flag `plugin_switch_xss_probe` whose
description is XSS_PAYLOAD. Environment:

  CONSOLE_URL               flagsd's base URL, e.g. http://127.0.0.1:8080 (the console is at /console/)
  SWITCHYARD_EDITOR_TOKEN   an editor token named EDITOR_NAME
  EDITOR_NAME               that token's name (the actor the audit log shows)
  SWITCHYARD_CLIENT_TOKEN   a client token (the console must refuse it)
  FLAGCTL                   the flagctl binary; FLAGCTL_TOKEN: a token for it (its changes show as its actor)
  FLAGCTL_ACTOR             the name of FLAGCTL_TOKEN
  WIDE_NAMESPACE, WIDE_FLAGS  a namespace of WIDE_FLAGS plugin switches plugin_switch_wide_000, ..., created in one
                            change (more than the console lists at once)
  CHROMIUM, CHROMEDRIVER    the browser and the driver (set by ./run)

Prints one line per check, `ok <name>` or `FAIL <name>: <what differed>`, and exits 1 when any check failed.
Checks depend on the ones before them (one browser session walks through the console like a person).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
import uuid

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

URL = os.environ["CONSOLE_URL"].rstrip("/")
EDITOR_TOKEN = os.environ["SWITCHYARD_EDITOR_TOKEN"]
EDITOR_NAME = os.environ["EDITOR_NAME"]
CLIENT_TOKEN = os.environ["SWITCHYARD_CLIENT_TOKEN"]
FLAGCTL = os.environ["FLAGCTL"]
FLAGCTL_TOKEN = os.environ["FLAGCTL_TOKEN"]
FLAGCTL_ACTOR = os.environ["FLAGCTL_ACTOR"]
WIDE_NAMESPACE = os.environ["WIDE_NAMESPACE"]
WIDE_FLAGS = int(os.environ["WIDE_FLAGS"])
XSS_PAYLOAD = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script> probe'

# Generous deadlines: liveness checks on a shared, busy machine, not speed claims.
DEADLINE = 30

failures = []
checks = []
browser = None


def check(name):
    """Registers a check; main() runs them in order. A check returns "" or what differed."""
    def decorate(function):
        checks.append((name, function))
        return function
    return decorate


def run_checks():
    for name, function in checks:
        try:
            problem = function()
        except Exception as error:  # A crash in a check is that check's failure, with where it happened.
            # The line of the check itself (the frame after run_checks), not of a helper it called.
            here = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == __file__]
            frame = here[1] if len(here) > 1 else (here[0] if here else None)
            where = f" (line {frame.lineno}: {frame.line})" if frame else ""
            message = getattr(error, "msg", None) or str(error)
            problem = f"{type(error).__name__}: {message.strip().splitlines()[0] if message.strip() else ''}{where}"
        if problem:
            failures.append(name)
            print(f"FAIL {name}: {problem}", flush=True)
        else:
            print(f"ok {name}", flush=True)


def start_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ["CHROMIUM"]
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,900", "--no-first-run", "--disable-extensions",
                     "--disable-background-networking", "--disable-sync", "--disable-component-update",
                     "--disable-default-apps", "--metrics-recording-only", "--no-default-browser-check"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=os.environ["CHROMEDRIVER"])
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(DEADLINE)
    return driver


def wait_for(condition, what, timeout=DEADLINE):
    """Waits until condition(browser) is truthy; returns its value or raises with `what` in the message."""
    try:
        # The console renders a view again on every change, so an element found a moment ago may be gone: look again.
        return WebDriverWait(browser, timeout, poll_frequency=0.1,
                             ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(condition)
    except TimeoutException:
        raise AssertionError(f"waited {timeout} s for {what}") from None


def steady(read, what="a read"):
    """Runs read() (several element reads), again whenever the view rendered itself anew in the middle of it (its
    charts and statistics load after it, and the Flags view's every 30 s): returns what a whole read returned."""
    outcome = {}
    def attempt(_):
        outcome["value"] = read()
        return True
    wait_for(attempt, what)
    return outcome["value"]


def by_id(element_id):
    return browser.find_element(By.ID, element_id)


def click(selector):
    """Clicks the element a CSS selector finds, looking it up again if the view rendered it again meanwhile (a live
    view can replace an element between finding it and clicking it)."""
    wait_for(lambda d: d.find_element(By.CSS_SELECTOR, selector).click() or True, f"{selector} to click")


def click_id(element_id):
    click(f'[id="{element_id}"]')


def flag_row(key):
    return browser.find_element(By.CSS_SELECTOR, f'tr[data-flag="{key}"]')


def badge_of(row):
    return row.find_element(By.CSS_SELECTOR, ".badge").get_attribute("data-state")


def flagctl(*arguments):
    """Runs the real flagctl binary against the same flagsd, as a release manager would."""
    with tempfile.TemporaryDirectory() as home:
        environment = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home, FLAGCTL_SERVER=URL,
                           FLAGCTL_TOKEN=FLAGCTL_TOKEN, FLAGCTL_NAMESPACE="rider", NO_COLOR="1")
        result = subprocess.run([FLAGCTL, *arguments], capture_output=True, text=True, env=environment, timeout=DEADLINE)
    if result.returncode != 0:
        raise AssertionError(f"flagctl {' '.join(arguments)} exited {result.returncode}: {result.stderr.strip()}")
    return result.stdout


def api(method, path, body=None, namespace="rider"):
    """Calls flagsd's API in a namespace (rider unless told) with FLAGCTL_TOKEN (an editor), as a release manager's
    script would; returns the JSON (an HTTP error raises)."""
    headers = {"Authorization": f"Bearer {FLAGCTL_TOKEN}", "Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{URL}/v1/namespaces/{namespace}/{path}", data=data, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=DEADLINE) as response:
        return json.loads(response.read())


VIEW_TITLES = {"flags": "Flags", "kill-switches": "Kill switches", "audit": "Audit", "guard": "Crash guard", "releases": "Releases",
               "experiments": "Experiments"}


def open_view(view):
    browser.find_element(By.CSS_SELECTOR, f'#view-nav a[data-view="{view}"]').click()
    # #/<namespace>/<view>, or #/<namespace>/experiments/<key> (the experiment shown).
    wait_for(lambda d: d.execute_script("return location.hash").split("/")[2:3] == [view]
             and d.find_element(By.ID, "view-title").text.startswith(VIEW_TITLES[view]), f"the {view} view")


def dialog_error(what):
    """Waits for the change dialog's error and returns its text."""
    return wait_for(lambda d: d.find_element(By.ID, "change-error").is_displayed() and d.find_element(By.ID, "change-error").text, what)


def sign_in(token):
    field = by_id("token-input")
    field.clear()
    field.send_keys(token)
    by_id("sign-in-button").click()


@check("a client token is refused with a message naming the role the console needs")
def refuse_client_token():
    browser.get(URL + "/console")
    sign_in(CLIENT_TOKEN)
    error = wait_for(lambda d: d.find_element(By.ID, "token-error").is_displayed() and d.find_element(By.ID, "token-error"),
                     "the sign-in error")
    problems = []
    if "editor" not in error.text:
        problems.append(f"message {error.text!r} does not name the editor role")
    if by_id("token-input").get_attribute("aria-invalid") != "true":
        problems.append("the token field is not marked invalid")
    if browser.execute_script("return sessionStorage.length") != 0:
        problems.append("a refused token was kept")
    return "; ".join(problems)


@check("signing in keeps the token in this tab's session storage only, never in the URL, a cookie or local storage")
def sign_in_with_editor():
    sign_in(EDITOR_TOKEN)
    wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-flag="plugin_switch_feed_promos"]'), "the flags table")
    problems = []
    stored = browser.execute_script(
        "return Object.keys(sessionStorage).map(k => sessionStorage.getItem(k))")
    if stored != [EDITOR_TOKEN]:
        problems.append(f"sessionStorage holds {len(stored)} values, expected exactly the token")
    if browser.execute_script("return localStorage.length") != 0:
        problems.append("localStorage is not empty")
    if browser.execute_script("return document.cookie") != "":
        problems.append("a cookie was set")
    if EDITOR_TOKEN in browser.current_url:
        problems.append("the token is in the URL")
    if not browser.current_url.endswith("/console/#/rider/flags"):
        problems.append(f"URL {browser.current_url}, expected /console/#/rider/flags")
    if by_id("live-status").get_attribute("data-state") != "live":
        problems.append("live updates are not running")
    return "; ".join(problems)


@check("flag descriptions from the server are shown as text and never run")
def descriptions_are_text():
    description, markup = steady(lambda: (flag_row("plugin_switch_xss_probe").find_element(By.CSS_SELECTOR, ".description").text,
                                          flag_row("plugin_switch_xss_probe").find_elements(By.CSS_SELECTOR, "img, script")))
    problems = []
    if description != XSS_PAYLOAD:
        problems.append(f"description shown as {description!r}")
    if markup:
        problems.append("the description became markup")
    if browser.execute_script("return window.__xss") is not None:
        problems.append("the payload ran")
    return "; ".join(problems)


@check("flipping a switch takes a reason and a confirmation")
def flip_switch():
    if steady(lambda: badge_of(flag_row("plugin_switch_feed_promos"))) == "disabled":
        return "plugin_switch_feed_promos starts disabled"
    click_id("disable:plugin_switch_feed_promos")
    dialog = by_id("change-dialog")
    wait_for(lambda d: dialog.get_attribute("open") is not None, "the confirmation dialog")
    problems = []
    if "plugin_switch_feed_promos" not in by_id("change-title").text:
        problems.append(f"the dialog's title {by_id('change-title').text!r} does not name the switch")
    # Confirming without a reason is refused, in the dialog.
    by_id("change-confirm").click()
    wait_for(lambda d: d.find_element(By.ID, "change-error").is_displayed(), "the missing-reason error")
    if dialog.get_attribute("open") is None:
        problems.append("the dialog closed without a reason")
    if by_id("change-reason").get_attribute("aria-invalid") != "true":
        problems.append("the reason field is not marked invalid")
    by_id("change-reason").send_keys("INC-7 promos card crashes on Android 14")
    by_id("change-confirm").click()
    wait_for(lambda d: dialog.get_attribute("open") is None, "the dialog to close after confirming")
    wait_for(lambda d: badge_of(flag_row("plugin_switch_feed_promos")) == "disabled", "the switch to show as disabled")
    announcement = wait_for(lambda d: d.find_element(By.ID, "announcer").text, "the saved announcement")
    if "Saved" not in announcement:
        problems.append(f"announced {announcement!r}")
    return "; ".join(problems)


@check("flagctl get sees the switch the console flipped")
def flagctl_sees_it():
    output = json.loads(flagctl("get", "plugin_switch_feed_promos", "-o", "json"))
    if output["flag"].get("disabled") is not True:
        return f"flagctl get shows {json.dumps(output['flag'])[:300]}"
    return ""


@check("the audit timeline shows the change with its reason, actor and source")
def audit_shows_it():
    open_view("audit")
    first = wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, "#audit-timeline > li"), "the audit timeline")[0]
    text = first.text
    problems = []
    for expected in ["disable plugin_switch_feed_promos", "INC-7 promos card crashes on Android 14", EDITOR_NAME, "console"]:
        if expected not in text:
            problems.append(f"the newest entry lacks {expected!r}: {text!r}")
    return "; ".join(problems)


@check("a change made with flagctl appears in the audit timeline without reloading")
def live_audit():
    browser.execute_script("window.__sameDocument = 'marker'")
    flagctl("kill", "kill_home_feed", "--city", "lagos", "--reason", "INC-8 feed stalls in Lagos", "--yes")
    first = wait_for(lambda d: (items := d.find_elements(By.CSS_SELECTOR, "#audit-timeline > li"))
                     and "kill_home_feed" in items[0].text and items[0], "the flagctl kill in the timeline")
    problems = []
    if FLAGCTL_ACTOR not in first.text or "cli" not in first.text:
        problems.append(f"the entry does not show flagctl's actor and source: {first.text!r}")
    if browser.execute_script("return window.__sameDocument") != "marker":
        problems.append("the page reloaded")
    return "; ".join(problems)


@check("a rollout changed with flagctl appears in the flags view without reloading")
def live_flags():
    open_view("flags")
    before = steady(lambda: flag_row("plugin_switch_map_traffic").find_element(By.CSS_SELECTOR, "[data-rollout]").get_attribute("data-rollout"))
    flagctl("rollout", "plugin_switch_map_traffic", "25", "--reason", "halve the traffic layer", "--yes")
    wait_for(lambda d: flag_row("plugin_switch_map_traffic").find_element(By.CSS_SELECTOR, "[data-rollout]")
             .get_attribute("data-rollout") == "2500", "the rollout to show 25 %")
    problems = []
    if before != "10000":
        problems.append(f"the rollout started at {before}, expected 10000")
    if "25 %" not in steady(lambda: flag_row("plugin_switch_map_traffic").text):
        problems.append("25 % is not shown")
    if browser.execute_script("return window.__sameDocument") != "marker":
        problems.append("the page reloaded")
    latest = by_id("last-change").text
    if FLAGCTL_ACTOR not in latest:
        problems.append(f"the latest-change line shows {latest!r}")
    return "; ".join(problems)


@check("changing a rollout in the console refuses a third decimal and saves an exact percentage")
def console_rollout():
    click_id("rollout:plugin_switch_map_scooters")
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the rollout dialog")
    value = by_id("rollout-value")
    problems = []
    if browser.switch_to.active_element != value:
        problems.append("focus is not on the rollout field")
    value.clear()
    value.send_keys("12.345")
    by_id("change-reason").send_keys("scooters beta")
    by_id("change-confirm").click()
    wait_for(lambda d: d.find_element(By.ID, "change-error").is_displayed(), "the rollout error")
    if value.get_attribute("aria-invalid") != "true":
        problems.append("the rollout field is not marked invalid")
    value.clear()
    value.send_keys("12.34")
    by_id("change-confirm").click()
    wait_for(lambda d: flag_row("plugin_switch_map_scooters").find_element(By.CSS_SELECTOR, "[data-rollout]")
             .get_attribute("data-rollout") == "1234", "the default rollout to be 1234 basis points")
    output = json.loads(flagctl("get", "plugin_switch_map_scooters", "-o", "json"))
    if output["flag"].get("rollout") != 1234:
        problems.append(f"flagctl shows rollout {output['flag'].get('rollout')}")
    return "; ".join(problems)


@check("a change made meanwhile by someone else is not overwritten: the console shows it and asks again")
def conflict():
    click_id("disable:plugin_switch_feed_trip_history")
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the disable dialog")
    by_id("change-reason").send_keys("INC-10 trip history times out")
    # Someone else changes the namespace while the dialog is open; flagctl waits for the console to see it.
    flagctl("rollout", "plugin_switch_feed_safety_tips", "40", "--reason", "safety tips to 40 %", "--yes")
    wait_for(lambda d: "40 %" in flag_row("plugin_switch_feed_safety_tips").text, "the other change to show")
    by_id("change-confirm").click()
    error = dialog_error("the conflict message")
    problems = []
    if f"{FLAGCTL_ACTOR} changed rider" not in error:
        problems.append(f"the dialog does not say who changed the namespace: {error!r}")
    # The view showed the other change before the confirmation, but the console's ETag was older: flagsd refused it.
    output = json.loads(flagctl("get", "plugin_switch_feed_trip_history", "-o", "json"))
    if output["flag"].get("disabled") is True:
        problems.append("the change was applied over the other one")
    wait_for(lambda d: d.find_element(By.ID, "change-confirm").is_enabled(), "the confirm button to be enabled again")
    by_id("change-confirm").click()
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "the second confirmation")
    wait_for(lambda d: badge_of(flag_row("plugin_switch_feed_trip_history")) == "disabled", "the switch to show as disabled")
    return "; ".join(problems)


@check("a kill switch can be killed with the keyboard alone, and focus comes back where it was")
def keyboard_kill():
    open_view("kill-switches")
    button = wait_for(lambda d: d.find_element(By.CSS_SELECTOR, 'button[id="kill:kill_map_layers"]'), "the kill button")
    browser.execute_script("arguments[0].focus()", button)
    problems = []
    button.send_keys(Keys.ENTER)
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the kill dialog")
    active = browser.switch_to.active_element
    if active.get_attribute("id") != "change-reason":
        problems.append(f"focus went to {active.get_attribute('id')!r}, not the reason")
    active.send_keys(Keys.ESCAPE)
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "Escape to close the dialog")
    if browser.switch_to.active_element.get_attribute("id") != "kill:kill_map_layers":
        problems.append("focus did not return to the kill button")
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the kill dialog again")
    active = browser.switch_to.active_element
    active.send_keys("INC-9 map stutters")
    active.send_keys(Keys.TAB)  # Cancel
    browser.switch_to.active_element.send_keys(Keys.TAB)  # Kill
    confirm = browser.switch_to.active_element
    if confirm.get_attribute("id") != "change-confirm":
        problems.append(f"Tab reached {confirm.get_attribute('id')!r}, not the confirm button")
    confirm.send_keys(Keys.ENTER)
    wait_for(lambda d: d.find_element(By.CSS_SELECTOR, 'tr[data-kill-switch="kill_map_layers"] .badge')
             .get_attribute("data-state") == "killed", "kill_map_layers to show as killed")
    open_view("flags")
    if steady(lambda: badge_of(flag_row("plugin_switch_map_pickup_spots"))) != "killed":
        problems.append("a member switch does not show as killed")
    return "; ".join(problems)


GUARDED = "plugin_switch_prefs_ride_pass"


FORWARDED = iter(range(1, 60000))


def post_sessions(count, crash_every, switches):
    """Reports `count` sessions through the events API with the client token, as apps do: each from its own unit, in
    batches of 20 from one address each, in a network (/24) of its own (flagsd runs behind a trusted proxy at
    127.0.0.1, which forwards them);
    every `crash_every`th one crashed."""
    now = time.time()
    stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + "Z"
    events = []
    for index in range(count):
        session_id = f"console-guard-{uuid.uuid4().hex}"
        events.append({"id": session_id, "type": "session", "time": stamp(now), "city": ["lagos", "nairobi", "lima"][index % 3],
                       "cohorts": [], "app_version": "5.14.0", "platform": "android", "session_id": session_id, "unit": session_id,
                       "start": stamp(now - 120), "end": stamp(now - 1), "crashed": index % crash_every == 0, "switches": switches})
    for start in range(0, count, 20):
        number = next(FORWARDED)
        request = urllib.request.Request(f"{URL}/v1/namespaces/rider/events", data=json.dumps({"events": events[start:start + 20]}).encode(),
                                         headers={"Authorization": f"Bearer {CLIENT_TOKEN}", "Content-Type": "application/json",
                                                  "X-Forwarded-For": f"10.3.{number % 250}.{number // 250 + 1}"})
        with urllib.request.urlopen(request, timeout=DEADLINE) as response:
            if response.status != 200:
                raise AssertionError(f"POST events answered {response.status}")


def guard_row(key):
    return browser.find_element(By.CSS_SELECTOR, f'#guard-status-table tr[data-guard-switch="{key}"]')


def refresh_guard():
    """Loads the crash guard's statistics again and waits for them: the Refresh button is disabled while they load,
    and the view replaces itself (and its button) when they arrive."""
    click_id("guard-status-refresh")
    wait_for(lambda d: by_id("guard-status-refresh").is_enabled(), "the crash guard's statistics to load")


@check("the crash guard view shows a switch the guard turned off and its evidence, without reloading")
def guard_trip():
    browser.execute_script("window.__sameDocument = 'guard'")
    open_view("guard")
    wait_for(lambda d: guard_row(GUARDED).get_attribute("data-state") == "watching", f"{GUARDED} watched in the crash guard's statistics")
    # 300 sessions with the switch, 30 crashed (10 %, the built-in bound is 2 %), spread over three cities: a global trip.
    post_sessions(300, 10, [GUARDED])
    wait_for(lambda d: guard_row(GUARDED).get_attribute("data-state") == "tripped", f"{GUARDED} tripped")
    # The view reloaded when the trip arrived, perhaps before the last batches: Refresh shows every session.
    # What the row shows is read in one go: the view renders again on every change, and a read that meets a new
    # render starts again.
    def refreshed():
        refresh_guard()
        row = guard_row(GUARDED)
        cells = {name: row.find_element(By.CSS_SELECTOR, f"td.{name}").text for name in ["sessions", "crashes", "crash-rate", "lower-bound", "bound"]}
        if cells["sessions"] != "300":
            return None
        cells["evidence"] = row.find_element(By.CSS_SELECTOR, ".guard-trip .evidence").text
        cells["trip"] = row.find_element(By.CSS_SELECTOR, ".guard-trip").text
        cells["record"] = row.find_element(By.CSS_SELECTOR, ".guard-trip pre").get_attribute("textContent")
        return cells
    cells = wait_for(lambda d: refreshed(), f"{GUARDED}'s 300 sessions after a refresh")
    problems = []
    if cells["sessions"] != "300" or cells["crashes"] != "30" or cells["crash-rate"] != "10 %" or cells["bound"] != "2 %":
        problems.append(f"the row shows {cells}")
    # The bound flagsd computed, as the API gives it (Wilson, 99.9 %: about 5.8 %).
    status = json.loads(flagctl("guard", "status", GUARDED, "-o", "json"))
    expected = round(status["switches"][0]["lower_bound"] * 100, 2)
    if cells["lower-bound"] != f"{expected:g} %":
        problems.append(f"lower bound {cells['lower-bound']!r}, the API says {expected} %")
    # The guard trips as soon as the batches that have arrived suffice (200 sessions at least): every batch holds 2
    # crashes in 20 sessions, so the evidence's rate is 10 % whenever it tripped.
    evidence = cells["evidence"]
    for expected_text in [" sessions (10 %)", "above the bound 2 %", "window 10m", "reported by clients from "]:
        if expected_text not in evidence:
            problems.append(f"the evidence {evidence!r} lacks {expected_text!r}")
    if "everywhere" not in cells["trip"]:
        problems.append("the trip does not say where")
    record = cells["record"]
    if not 200 <= json.loads(record).get("sessions", 0) <= 300:
        problems.append(f"the recorded evidence is not the trip's: {record[:200]!r}")
    off = by_id("guard-disabled").text
    if GUARDED not in off or "everywhere" not in off:
        problems.append(f"the switches still off show {off!r}")
    timeline = by_id("guard-timeline").find_elements(By.CSS_SELECTOR, "li")
    if not timeline or f"crash guard: disable {GUARDED} everywhere" not in timeline[0].text or "crash-guard" not in timeline[0].text:
        problems.append(f"the guard's changes start with {timeline[0].text if timeline else None!r}")
    if browser.execute_script("return window.__sameDocument") != "guard":
        problems.append("the page reloaded")
    return "; ".join(problems)


@check("a switch the guard turned off is enabled from its view after a warning, and the guard cools down")
def guard_reenable():
    click_id(f"enable:{GUARDED}:guard")
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the enable dialog")
    problems = []
    summary = by_id("change-dialog").text
    if "crash guard turned it off" not in summary:
        problems.append(f"the dialog does not warn that the guard turned it off: {summary[:300]!r}")
    by_id("change-reason").send_keys("INC-10 fixed in 5.14.1")
    by_id("change-confirm").click()
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "the dialog to close")
    def cooling():
        row = guard_row(GUARDED)
        if row.get_attribute("data-state") != "cooling_down":
            return None
        return {"text": row.text, "trips": len(row.find_elements(By.CSS_SELECTOR, ".guard-trip"))}
    row = wait_for(lambda d: cooling(), f"{GUARDED} cooling down in the statistics")
    if "Watched again from" not in row["text"]:
        problems.append(f"the row does not say when the guard watches again: {row['text']!r}")
    if row["trips"]:
        problems.append("a re-enabled trip is still shown as in force")
    if browser.find_elements(By.ID, "guard-disabled"):
        problems.append("the switch is still listed as off")
    output = json.loads(flagctl("get", GUARDED, "-o", "json"))
    if output["flag"].get("disabled", False) is not False or output["flag"].get("disabled_scopes"):
        problems.append(f"flagctl get shows {json.dumps(output['flag'])[:200]}")
    return "; ".join(problems)


PROPOSED = "plugin_switch_map_scooters"


@check("past the guard's budget a proposal shows in its view and is applied from there")
def guard_proposal():
    # A namespace whose guard only proposes (max_trips_per_hour: 0), set through the API as a release manager would.
    flag_set = api("GET", "flag-set")["flag_set"]
    flag_set["crash_guard"] = {"max_trips_per_hour": 0}
    api("PUT", "flag-set", {"flag_set": flag_set, "reason": "propose only"})
    # Half of them crash: well above twice the 10 % of the sessions without it (the guarded switch's), also without
    # the crashes of the two busiest addresses.
    post_sessions(300, 2, [PROPOSED])

    def proposal():
        refresh_guard()
        items = browser.find_elements(By.CSS_SELECTOR, f'#guard-proposal-list li[data-guard-switch="{PROPOSED}"]')
        if not items:
            return None
        return {"html": items[0].get_attribute("innerHTML"), "text": items[0].text,
                "budget": by_id("guard-budget").text, "state": guard_row(PROPOSED).get_attribute("data-state")}
    item = wait_for(lambda d: proposal(), f"a proposal to turn {PROPOSED} off")
    problems = []
    if "evidence" not in item["html"] or "crashes in" not in item["text"]:
        problems.append(f"the proposal shows no evidence: {item['text']!r}")
    if "only proposes" not in item["budget"]:
        problems.append(f"the budget says {item['budget']!r}")
    if item["state"] != "proposed":
        problems.append(f"the switch's state is {item['state']!r}")
    click(f'#guard-proposal-list li[data-guard-switch="{PROPOSED}"] button[id^="apply-proposal:"]')
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the apply dialog")
    if "proposes" not in by_id("change-dialog").text:
        problems.append(f"the dialog does not say the guard proposes it: {by_id('change-dialog').text[:300]!r}")
    by_id("change-reason").send_keys("INC-11: the scooters layer crashes")
    by_id("change-confirm").click()
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "the dialog to close")
    wait_for(lambda d: not d.find_elements(By.CSS_SELECTOR, f'#guard-proposal-list li[data-guard-switch="{PROPOSED}"]'),
             "the applied proposal to leave the list")
    output = json.loads(flagctl("get", PROPOSED, "-o", "json"))
    if output["flag"].get("disabled") is not True:
        problems.append(f"flagctl get shows {json.dumps(output['flag'])[:200]}")
    audit = json.loads(flagctl("audit", PROPOSED, "--source", "crash-guard", "-o", "json"))
    entries = audit.get("entries", [])
    if not entries or entries[0].get("actor") != EDITOR_NAME or "apply crash guard proposal" not in entries[0].get("summary", ""):
        problems.append(f"the audit log starts with {entries[0] if entries else None!r}")
    return "; ".join(problems)



def series_of(key, hours):
    """The API's series of one switch: sessions and crashes per step over the last `hours`."""
    body = api("GET", f"series?hours={hours}&switch={key}")
    return next(entry for entry in body["series"] if entry["key"] == key)


def rate_chart(key):
    """The crash guard view's chart of `key`, read in one go; None while it is not there."""
    return browser.execute_script("""
        const figure = document.querySelector(`#guard-charts figure[data-guard-switch="${CSS.escape(arguments[0])}"]`);
        const chart = figure && figure.querySelector('svg.rate-chart');
        if (!chart) return null;
        return { sessions: chart.dataset.sessions, crashes: chart.dataset.crashes, bound: chart.dataset.bound, trips: Number(chart.dataset.trips),
                 role: chart.getAttribute('role'), label: chart.getAttribute('aria-label'), boundLine: chart.querySelectorAll('.bound-line').length,
                 markers: chart.querySelectorAll('.trip-marker').length, caption: figure.querySelector('figcaption').innerText,
                 shown: figure.dataset.shown };
    """, key)


def totals(text):
    return sum(int(value) for value in text.split(",") if value)


@check("the crash guard view draws each switch's crash rate over time against its bound with its trip marked, from the API's numbers")
def guard_rate_chart():
    open_view("guard")
    refresh_guard()
    chart = wait_for(lambda d: (chart := rate_chart(GUARDED)) and totals(chart["sessions"]) >= 300 and chart, f"the chart of {GUARDED}")
    problems = []
    series = series_of(GUARDED, 1)
    if totals(chart["sessions"]) != sum(series["sessions"]) or totals(chart["crashes"]) != sum(series["crashes"]):
        problems.append(f"the chart holds {totals(chart['sessions'])} sessions and {totals(chart['crashes'])} crashes, the API {sum(series['sessions'])} and {sum(series['crashes'])}")
    bound = json.loads(flagctl("guard", "status", GUARDED, "-o", "json"))["switches"][0]["bound"]
    if float(chart["bound"]) != bound or chart["boundLine"] != 1:
        problems.append(f"the bound line is at {chart['bound']!r} ({chart['boundLine']} lines), the API's bound is {bound}")
    if chart["trips"] < 1 or chart["markers"] != chart["trips"]:
        problems.append(f"the trip is not marked: {chart['trips']} trips, {chart['markers']} markers")
    if chart["role"] != "img" or "crashed of" not in chart["label"] or "bound" not in chart["label"]:
        problems.append(f"the chart's words are {chart['label']!r}")
    return "; ".join(problems)


AMBER = "plugin_switch_split_fare"


@check("a switch crashing above its bound but not yet enough to trip shows amber, saying how often it crashes and what the guard waits for")
def guard_amber():
    # 60 sessions, all crashed: above its bound (2 %, or twice the rate of the sessions without it, which the checks
    # before made high), but fewer sessions than the guard needs to trip.
    post_sessions(60, 1, [AMBER])
    open_view("guard")
    seen = {}
    def amber():
        refresh_guard()
        row = guard_row(AMBER)
        seen["row"] = [row.get_attribute("data-state"), row.get_attribute("data-shown"), row.text[:300]]
        if row.get_attribute("data-shown") != "rising":
            return None
        badge = row.find_element(By.CSS_SELECTOR, ".badge")
        return {"state": row.get_attribute("data-state"), "tone": badge.get_attribute("class"), "sentence": row.find_element(By.CSS_SELECTOR, ".crash-sentence").text,
                "colour": browser.execute_script("return getComputedStyle(arguments[0]).color", badge)}
    try:
        row = wait_for(lambda d: amber(), f"{AMBER} amber")
    except AssertionError as error:
        raise AssertionError(f"{error}; the row shows {seen.get('row')}") from None
    problems = []
    if row["state"] != "watching" or "partial" not in row["tone"]:
        problems.append(f"the row is {row}")
    sentence = row["sentence"]
    for text in ["as often as sessions without it", "above the bound", "not yet sure", "of 200 sessions needed"]:
        if text not in sentence:
            problems.append(f"the sentence {sentence!r} lacks {text!r}")
    chart = rate_chart(AMBER)
    if not chart or chart["shown"] != "rising" or totals(chart["sessions"]) != 60:
        problems.append(f"its chart is {chart}")
    return "; ".join(problems)


RELEASED = "plugin_switch_feed_safety_tips"
DECLARED = "plugin_switch_confirmation_promo"


def release_card(key):
    """What a plan's card shows, read in one go (the view renders again on every change and every 30 s, so elements
    found one by one may belong to different renderings): None while the card is not there."""
    return browser.execute_script("""
        const card = document.querySelector(`article.release[data-release="${CSS.escape(arguments[0])}"]`);
        if (!card) return null;
        const all = (selector) => [...card.querySelectorAll(selector)];
        const text = (selector) => (card.querySelector(selector) || {}).textContent || '';
        return {
          status: card.dataset.status, text: card.innerText, stage: text('.release-stage'), next: text('.release-next'),
          steps: all('.release-step').map((step) => [step.dataset.step, step.textContent]),
          sides: all('.release-assessment tbody tr[data-side]').map((row) => row.dataset.side),
          events: all('ol.release-timeline > li').map((item) => [item.dataset.kind, item.innerText]),
          buttons: all('.actions button').map((button) => button.id),
          guardrails: all('.release-guardrails tbody tr').map((row) => [row.dataset.guardrail, row.dataset.state]),
          verdict: text('.verdict'),
        };
    """, key)


def release_shows(key, what, condition):
    """Waits until the card of `key` satisfies condition(card) and returns the card."""
    return wait_for(lambda d: (card := release_card(key)) and condition(card) and card, what)


def open_release_dialog(verb, reason):
    """Clicks the plan's button for `verb` (Pause…, Resume…) and gives the dialog a reason, without confirming."""
    wait_for(lambda d: d.find_element(By.ID, f"release-{verb}:{RELEASED}").click() or True, f"the {verb} button to click")
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, f"the {verb} dialog")
    by_id("change-reason").send_keys(reason)


def confirm_release_step(kind):
    """Confirms the dialog, waits for it to close and for the step (`paused`, `resumed`) to top the timeline; returns
    the card."""
    by_id("change-confirm").click()
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "the dialog to close")
    return release_shows(RELEASED, f"the {kind} step in the timeline", lambda card: card["events"][:1] and card["events"][0][0] == kind)


@check("the releases view shows a plan started through the API, its stage, its guardrails and its timeline, without reloading")
def release_shown():
    # A plan declared but not started (in the flag set, as a flag file would declare it) offers Start.
    flag = api("GET", f"flags/{DECLARED}")
    definition = {name: value for name, value in flag.items() if name not in ("key", "version", "kill_switches", "plugin_point")}
    definition["release"] = {"stages": [{"cohorts": ["beta"], "rollout": 500}, {"rollout": 10000}]}
    api("PUT", f"flags/{DECLARED}", {"flag": definition, "reason": "declare the promo's release plan"})
    browser.execute_script("window.__sameDocument = 'releases'")
    open_view("releases")
    declared = release_shows(DECLARED, f"{DECLARED}'s declared plan", lambda card: card["status"] == "declared")
    # Started through the API while the view is open, at a pace the runner will not step within the test.
    api("POST", f"flags/{RELEASED}/release/start", {
        "plan": {"soak": "2h", "min_sessions": 100000000,
                 "stages": [{"cities": ["lagos"], "rollout": 100}, {"cities": ["nairobi"], "rollout": 10000}, {"rollout": 10000}]},
        "guardrails": {"trip_booked": "-0.5pp"},
        "reason": "REL-1 safety tips, Lagos first"})
    card = release_shows(RELEASED, f"{RELEASED}'s plan running with its start in the timeline",
                         lambda card: card["status"] == "running" and card["events"])
    problems = []
    if card["stage"] != "stage 1 of 3 (cities lagos at 1 %)":
        problems.append(f"the stage shows {card['stage']!r}")
    steps = card["steps"]
    if [step for step, _ in steps] != ["current", "upcoming", "upcoming"] or "everyone at 100 %" not in steps[2][1]:
        problems.append(f"the stages show {steps}")
    if not card["next"].strip():
        problems.append("the next decision is not shown")
    if "100,000,000 sessions" not in card["text"] or "soak 2h" not in card["text"]:
        problems.append("the plan's soak and minimum sessions are not shown")
    if card["sides"] != ["with", "without"]:
        problems.append(f"the sessions with and without the switch show as {card['sides']}")
    if card["guardrails"] != [["trip_booked", "undecided"]]:
        problems.append(f"the guardrails show as {card['guardrails']}")
    if "guardrails: trip_booked -0.5pp" not in card["text"] or "waiting for crash_rate, trip_booked" not in card["verdict"]:
        problems.append(f"the plan's guardrail or what the runner waits for is not shown: {card['verdict']!r}")
    kinds = [kind for kind, _ in card["events"]]
    if kinds != ["started"]:
        problems.append(f"the timeline holds {kinds}")
    elif not all(text in card["events"][0][1] for text in ["REL-1 safety tips, Lagos first", FLAGCTL_ACTOR, "api", "stage 1 of 3"]):
        problems.append(f"the start shows as {card['events'][0][1]!r}")
    if card["buttons"] != [f"release-{verb}:{RELEASED}" for verb in ["pause", "advance", "abort"]]:
        problems.append(f"a running plan offers {card['buttons']}")
    if declared["buttons"] != [f"release-start:{DECLARED}"]:
        problems.append(f"the declared plan offers {declared['buttons']}, not Start alone")
    if browser.execute_script("return window.__sameDocument") != "releases":
        problems.append("the page reloaded")
    return "; ".join(problems)


@check("a release is paused from the releases view, and its timeline gains the pause")
def release_paused():
    open_release_dialog("pause", "REL-2 hold while support checks the Lagos tickets")
    problems = []
    if RELEASED not in by_id("change-title").text or "stage 1 of 3" not in by_id("change-summary").text:
        problems.append(f"the dialog says {by_id('change-dialog').text[:300]!r}")
    card = confirm_release_step("paused")
    kinds = [kind for kind, _ in card["events"]]
    if kinds != ["paused", "started"]:
        problems.append(f"the timeline holds {kinds}")
    for text in ["REL-2 hold while support checks the Lagos tickets", EDITOR_NAME, "console", "paused at stage 1 of 3"]:
        if text not in card["events"][0][1]:
            problems.append(f"the pause lacks {text!r}: {card['events'][0][1]!r}")
    if card["status"] != "paused":
        problems.append(f"the plan shows as {card['status']!r}")
    if card["steps"][0][0] != "paused":
        problems.append(f"the stage is marked {card['steps'][0][0]!r}, not paused")
    if card["buttons"] != [f"release-{verb}:{RELEASED}" for verb in ["resume", "advance", "abort"]]:
        problems.append(f"a paused plan offers {card['buttons']}")
    status = api("GET", f"flags/{RELEASED}/release")
    if status["plan"]["state"]["status"] != "paused":
        problems.append(f"flagsd says {status['plan']['state']}")
    return "; ".join(problems)


@check("a paused release is resumed from the releases view")
def release_resumed():
    open_release_dialog("resume", "REL-3 tickets were unrelated")
    card = confirm_release_step("resumed")
    problems = []
    kinds = [kind for kind, _ in card["events"]]
    if kinds != ["resumed", "paused", "started"]:
        problems.append(f"the timeline holds {kinds}")
    if card["status"] != "running" or "stage 1 of 3" not in card["stage"]:
        problems.append(f"the plan shows {card['status']!r} at {card['stage']!r}")
    status = api("GET", f"flags/{RELEASED}/release")
    if status["plan"]["state"]["status"] != "running" or status["plan"]["state"].get("stage") != 0:
        problems.append(f"flagsd says {status['plan']['state']}")
    if [event["source"] for event in status["timeline"]] != ["console", "console", "api"]:
        problems.append(f"flagsd's timeline: {[(event['source'], event['summary']) for event in status['timeline']]}")
    return "; ".join(problems)


@check("a release step someone else made first is shown, and flagsd's refusal of the stale one is shown in the dialog")
def release_refused():
    open_release_dialog("pause", "REL-4 pause for the evening")
    # A release manager pauses it with flagctl while the dialog is open; the view shows it behind the dialog.
    flagctl("release", "pause", RELEASED, "--reason", "REL-4 paused from the terminal", "--yes")
    release_shows(RELEASED, "flagctl's pause to show", lambda card: card["status"] == "paused")
    by_id("change-confirm").click()
    conflict = dialog_error("the conflict message")
    problems = []
    if f"{FLAGCTL_ACTOR} changed rider" not in conflict:
        problems.append(f"the dialog does not say who changed the namespace: {conflict!r}")
    # Confirmed again (once the dialog is based on the latest version), the pause is refused: the plan is no longer
    # running (flagsd's words).
    wait_for(lambda d: d.find_element(By.ID, "change-confirm").is_enabled(), "the confirm button to be enabled again")
    by_id("change-confirm").click()
    refusal = wait_for(lambda d: (text := d.find_element(By.ID, "change-error").text).startswith("flagsd refused") and text,
                       "flagsd's refusal")
    if "only a running plan can pause" not in refusal:
        problems.append(f"the dialog shows {refusal!r}")
    by_id("change-cancel").click()
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "the dialog to close")
    card = release_card(RELEASED)
    kinds = [kind for kind, _ in card["events"]]
    if kinds[:2] != ["paused", "resumed"] or FLAGCTL_ACTOR not in card["events"][0][1] or "cli" not in card["events"][0][1]:
        problems.append(f"the timeline starts with {card['events'][:1]}")
    return "; ".join(problems)



ROLLED = "plugin_switch_feed_trip_history"
PROPOSING = "plugin_switch_surge_notice"


def flag_row_shown(key):
    """What the Flags view's row of `key` shows, read in one go."""
    return browser.execute_script("""
        const row = document.querySelector(`#flags-table tr[data-flag="${CSS.escape(arguments[0])}"]`);
        if (!row) return null;
        const spark = row.querySelector('svg.sparkline');
        return { held: [...row.querySelectorAll('[data-holder]')].map((badge) => badge.dataset.holder), text: row.innerText,
                 total: spark ? Number(spark.dataset.total) : null, values: spark ? spark.dataset.values : null,
                 label: spark ? spark.getAttribute('aria-label') : null, link: (row.querySelector('a.key') || {}).hash || null };
    """, key)


@check("the flags list draws each switch's sessions over six hours from the API's numbers and marks the switches a plan or the guard holds")
def flags_sparklines():
    open_view("flags")
    row = wait_for(lambda d: (row := flag_row_shown(GUARDED)) and row["total"] is not None and row["total"] >= 300
                   and "release" in (flag_row_shown(RELEASED) or {}).get("held", []) and row, "the sessions of the flags")
    problems = []
    series = series_of(GUARDED, 6)
    if row["total"] != sum(series["sessions"]) or len(row["values"].split(",")) != 60:
        problems.append(f"{GUARDED}'s sparkline holds {row['total']} sessions in {len(row['values'].split(','))} steps, the API {sum(series['sessions'])} in 60")
    if "sessions with" not in (row["label"] or ""):
        problems.append(f"the sparkline's words are {row['label']!r}")
    released = flag_row_shown(RELEASED)
    if "release plan" not in released["text"]:
        problems.append(f"{RELEASED}'s row does not say a plan holds it: {released['text']!r}")
    amber = flag_row_shown(AMBER)
    if "guard-watch" not in amber["held"]:
        problems.append(f"{AMBER}'s row does not show the guard's concern: {amber['held']}")
    if row["link"] != f"#/rider/flag/{GUARDED}":
        problems.append(f"the key links to {row['link']!r}")
    return "; ".join(problems)


@check("a plan that rolls back marks the failed stage failed, keeps its evidence and charts, and offers no primary button; the rollout dialog of a switch whose plan runs says saving pauses it")
def release_rolled_back():
    # The crash guard left out (it would trip the switch and abort the plan first), a plan over three cities, advanced
    # by hand to its second stage.
    flag = api("GET", f"flags/{ROLLED}")
    definition = {name: value for name, value in flag.items() if name not in ("key", "version", "kill_switches", "plugin_point")}
    definition["crash_guard"] = {"enabled": False}
    api("PUT", f"flags/{ROLLED}", {"flag": definition, "reason": "the release plan judges it"})
    api("POST", f"flags/{ROLLED}/release/start", {
        "plan": {"soak": "2h", "min_sessions": 100000000,
                 "stages": [{"cities": ["lagos"], "rollout": 1000}, {"cities": ["lagos", "nairobi", "lima"], "rollout": 5000}, {"rollout": 10000}]},
        "reason": "REL-2 saved places"})
    api("POST", f"flags/{ROLLED}/release/advance", {"reason": "REL-2 Lagos looks fine"})
    # And a plan at its first stage: shown worse there, on clients' evidence alone, it proposes turning off.
    flag = api("GET", f"flags/{PROPOSING}")
    definition = {name: value for name, value in flag.items() if name not in ("key", "version", "kill_switches", "plugin_point")}
    definition["crash_guard"] = {"enabled": False}
    api("PUT", f"flags/{PROPOSING}", {"flag": definition, "reason": "the release plan judges it"})
    api("POST", f"flags/{PROPOSING}/release/start", {
        "plan": {"soak": "2h", "min_sessions": 100000000, "stages": [{"cities": ["lagos", "nairobi", "lima"], "rollout": 5000}, {"rollout": 10000}]},
        "reason": "REL-4 surge notice"})
    problems = []
    open_view("flags")
    wait_for(lambda d: "release" in (flag_row_shown(ROLLED) or {}).get("held", []), f"{ROLLED} held by its plan")
    click_id(f"rollout:{ROLLED}")
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the rollout dialog")
    summary = by_id("change-summary")
    if summary.get_attribute("data-pauses-plan") != "true" or "saving this pauses the plan" not in summary.text:
        problems.append(f"the rollout dialog does not warn that saving pauses the plan: {summary.text!r}")
    by_id("change-cancel").click()
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "the dialog to close")
    open_view("releases")
    # A stage counts from the first minute that began after it (flagsd runs with --events-max-skew 0s): wait for it.
    began = time.time()
    wait_for(lambda d: int(time.time()) // 60 > int(began) // 60, "the next minute", timeout=70)
    # A third of the sessions with it crash, almost none without: shown worse, it rolls back to the first stage.
    post_sessions(240, 3, [ROLLED, PROPOSING])
    post_sessions(240, 1000000, [])
    card = wait_for(lambda d: (card := release_card(ROLLED)) and card["status"] == "rolled_back" and card, f"{ROLLED} rolled back", timeout=120)
    shown = browser.execute_script("""
        const card = document.querySelector(`article.release[data-release="${CSS.escape(arguments[0])}"]`);
        const chart = card.querySelector('svg.rollout-chart');
        const difference = card.querySelector('svg.difference-chart');
        return { primary: card.querySelectorAll('.actions button.primary').length, evidence: (card.querySelector('.rolled-back') || {}).innerText || null,
                 kinds: chart ? chart.dataset.kinds : null, rollouts: chart ? chart.dataset.rollouts : null,
                 difference: difference ? { lower: difference.dataset.lower, margin: difference.dataset.margin, label: difference.getAttribute('aria-label') } : null,
                 trouble: card.classList.contains('trouble'), badge: card.querySelector('.release-head .badge').className };
    """, ROLLED)
    steps = card["steps"]
    if [step for step, _ in steps] != ["rolled_back", "failed", "upcoming"] or "failed" not in steps[1][1]:
        problems.append(f"the stages show {steps}")
    if shown["primary"]:
        problems.append("a rolled-back plan offers a primary button")
    if not shown["evidence"] or "Rolled back from stage 2" not in shown["evidence"] or "with the switch\t240\t80" not in shown["evidence"].lower():
        problems.append(f"the roll-back's evidence is not kept: {shown['evidence']!r}")
    release = api("GET", f"flags/{ROLLED}/release")
    timeline = list(reversed(release["timeline"]))
    expected = ",".join("" if (event["state"] or {}).get("stage") is None else str(release["plan"]["stages"][event["state"]["stage"]]["rollout"]) for event in timeline)
    if shown["rollouts"] != expected or not (shown["kinds"] or "").endswith("rolled_back"):
        problems.append(f"the rollout chart holds {shown['rollouts']!r} ({shown['kinds']!r}), the timeline {expected!r}")
    evidence = release["timeline"][0]["evidence"]
    if not shown["difference"] or float(shown["difference"]["lower"]) != evidence["difference_lower"] or float(shown["difference"]["margin"]) != evidence["margin"]:
        problems.append(f"the interval chart shows {shown['difference']}, the evidence {evidence.get('difference_lower')} against {evidence.get('margin')}")
    if not shown["trouble"] or "killed" not in shown["badge"]:
        problems.append("the rolled-back plan is not marked red")
    return "; ".join(problems)



@check("a plan's proposal to turn its switch off shows first on its card in red and is confirmed from there")
def release_proposal_confirmed():
    open_view("releases")
    selector = f'[id="release-proposals:{PROPOSING}"] button[id^="release-proposal-confirm:"]'
    button = wait_for(lambda d: d.find_element(By.CSS_SELECTOR, selector), f"{PROPOSING}'s proposal", timeout=120)
    proposal = button.get_attribute("id").split(":")[1]
    problems = []
    card = release_card(PROPOSING)
    if "Clients' evidence alone never turns a switch off" not in card["text"]:
        problems.append(f"the card does not explain the proposal: {card['text'][:300]!r}")
    click(selector)
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the confirm dialog")
    if f"Confirm proposal {proposal}" not in by_id("change-title").text:
        problems.append(f"the dialog is titled {by_id('change-title').text!r}")
    by_id("change-reason").send_keys("REL-4: the notice crashes, confirmed")
    by_id("change-confirm").click()
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "the dialog to close")
    release_shows(PROPOSING, f"{PROPOSING} rolled back to off", lambda card: card["status"] == "rolled_back")
    if browser.find_elements(By.CSS_SELECTOR, f'[id="release-proposals:{PROPOSING}"]'):
        problems.append("the confirmed proposal is still shown")
    release = api("GET", f"flags/{PROPOSING}/release")
    state = release["plan"]["state"]
    if state["status"] != "rolled_back" or state.get("stage") is not None:
        problems.append(f"the plan is {state}")
    if not any(item["id"] == int(proposal) and item["state"] == "confirmed" for item in release.get("proposals", [])):
        problems.append(f"flagsd shows the proposals {release.get('proposals')}")
    audit = json.loads(flagctl("audit", PROPOSING, "-o", "json")).get("entries", [])
    if not audit or audit[0]["actor"] != EDITOR_NAME or audit[0]["source"] != "console":
        problems.append(f"the audit log starts with {audit[:1]}")
    return "; ".join(problems)


# Experiments: a switch at 75 % (its rules at 0 and 100 % split no one), one at 50 % into whose "with" arm alone units
# are entered (a sample ratio mismatch), and the experiment flag split 34/33/33 between three variants.
SPLIT = "plugin_switch_map_pickup_spots"
BROKEN = "plugin_switch_confirmation_promo"
VARIANTS = "confirmation_button_copy"
METRIC = "fare"


def post_outcomes(units):
    """Reports units' sessions and outcomes through the events API with the client token, as the client runtime does:
    `units` holds (splits, variants, sessions, fare or None) per unit; each unit reports its sessions and, with a fare,
    trip_booked and fare, all naming its arms. Batches of at most 20 events come from an address of their own."""
    now = time.time()
    stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + "Z"
    batches, events = [], []
    for splits, variants, sessions, fare in units:
        unit = uuid.uuid4().hex
        common = {"time": stamp(now - 5), "city": "lagos", "cohorts": [], "app_version": "5.14.0", "platform": "ios",
                  "unit": unit, "splits": splits, "variants": variants, "switches": []}
        unit_events = []
        for index in range(sessions):
            session_id = f"console-experiment-{uuid.uuid4().hex}"
            unit_events.append({**common, "id": session_id, "type": "session", "session_id": session_id,
                                "start": stamp(now - 300 + index * 60), "end": stamp(now - 250 + index * 60), "crashed": False})
        if fare is not None:
            unit_events.append({**common, "id": str(uuid.uuid4()), "type": "metric", "metric": "trip_booked"})
            unit_events.append({**common, "id": str(uuid.uuid4()), "type": "metric", "metric": METRIC, "value": fare})
        if len(events) + len(unit_events) > 20:
            batches.append(events)
            events = []
        events += unit_events
    batches.append(events)
    for batch in batches:
        number = next(FORWARDED)
        request = urllib.request.Request(f"{URL}/v1/namespaces/rider/events", data=json.dumps({"events": batch}).encode(),
                                         headers={"Authorization": f"Bearer {CLIENT_TOKEN}", "Content-Type": "application/json",
                                                  "X-Forwarded-For": f"10.4.{number % 250}.{number // 250 + 1}"})
        with urllib.request.urlopen(request, timeout=DEADLINE) as response:
            answer = json.loads(response.read())
            if response.status != 200 or answer.get("dropped"):
                raise AssertionError(f"POST events answered {response.status}: {json.dumps(answer)[:300]}")


def amount(value, share, signed):
    """A number as the console and flagctl print it."""
    if value is None:
        return "–"
    sign = "+" if signed and value >= 0 else ""
    if share:
        return f"{sign}{value * 100:.2f}{' pp' if signed else '%'}"
    return sign + (f"{value:.1f}" if abs(value) >= 100 else f"{value:.3f}")


def interval_text(difference, share):
    return (f"{amount(difference['estimate'], share, True)} [{amount(difference['lower'], share, True)}, "
            f"{amount(difference['upper'], share, True)}]")


def experiment_shown(key):
    """What the results of `key` show, read in one go (the view renders again on changes and every 30 s); None until
    they are loaded."""
    return browser.execute_script("""
        const section = document.querySelector(`#experiment-results[data-experiment="${CSS.escape(arguments[0])}"]`);
        if (!section || !section.dataset.trustworthy) return null;
        const charts = (selector) => [...section.querySelectorAll(selector)].map((chart) => ({
          metric: chart.dataset.metric, arm: chart.dataset.arm || null, role: chart.getAttribute('role'),
          label: chart.getAttribute('aria-label'), bars: chart.querySelectorAll('.ci-bar').length,
          dots: chart.querySelectorAll('.ci-estimate').length, zero: chart.querySelectorAll('.zero-line').length,
          rows: [...chart.querySelectorAll('.ci-row')].map((row) => [row.dataset.arm, row.getAttribute('class')]),
          points: Number(chart.dataset.points || 0), band: chart.querySelectorAll('.ci-band').length,
          tag: chart.tagName.toLowerCase(), width: chart.getBoundingClientRect().width }));
        const banner = section.querySelector('#experiment-srm');
        const metrics = section.querySelector('#experiment-metrics');
        const first = section.querySelector('.experiment-metric');
        return {
          trustworthy: section.dataset.trustworthy, text: section.innerText,
          arms: [...section.querySelectorAll('#experiment-arms tbody tr')].map((row) => [row.dataset.arm, row.querySelector('.units').textContent]),
          intervals: charts('svg.interval-chart'), histories: charts('svg.history-chart'),
          banner: banner && { classes: banner.className, role: banner.getAttribute('role'), text: banner.innerText,
                              red: getComputedStyle(banner).borderColor, first: banner === section.querySelector('#experiment-srm, #experiment-arms, .experiment-metric') },
          greyed: metrics && metrics.classList.contains('untrustworthy'), opacity: first ? Number(getComputedStyle(first).opacity) : 1,
          verdicts: [...section.querySelectorAll('.badge.verdict')].map((badge) => badge.dataset.verdict),
        };
    """, key)


def results_show(key, what, condition):
    return wait_for(lambda d: (shown := experiment_shown(key)) and condition(shown) and shown, what)


@check("the experiments view lists the namespace's experiments, and a switch's row links to its results")
def experiments_listed():
    # 30 units with the switch and 10 without it (as its 75 % declares); the riders with it book more and pay more.
    units = [({SPLIT: True}, {}, 1 + index % 3, 12.0 + index % 7 * 2.5 if index % 4 else None) for index in range(30)]
    units += [({SPLIT: False}, {}, 1 + index % 2, 10.0 + index % 5 * 2.0 if index % 2 else None) for index in range(10)]
    post_outcomes(units)
    browser.execute_script("window.__sameDocument = 'experiments'")
    open_view("flags")
    problems = []
    if steady(lambda: flag_row("plugin_switch_prefs_accessibility").find_elements(By.CSS_SELECTOR, "a.experiment-link")):
        problems.append("a switch at 100 % links to experiment results")
    click_id(f"experiment:{SPLIT}")
    wait_for(lambda d: d.execute_script("return location.hash").endswith(f"/experiments/{SPLIT}")
             and d.find_element(By.ID, "view-title").text.startswith("Experiments"), "the experiments view")
    # Read in one go: the view renders again on every change (release plans step meanwhile), replacing its elements.
    listed, current = browser.execute_script("""
        return [[...document.querySelectorAll('#experiment-list li')].map((item) => item.dataset.experiment),
                (document.querySelector('#experiment-list a[aria-current="page"]') || {}).id || null];
    """)
    for key in [VARIANTS, SPLIT, BROKEN]:
        if key not in listed:
            problems.append(f"{key} is not listed: {listed}")
    for key in ["plugin_switch_prefs_accessibility", "plugin_switch_prefs_saved_places"]:
        if key in listed:
            problems.append(f"{key} (not split) is listed")
    if current != f"experiment-link:{SPLIT}":
        problems.append(f"the list marks {current!r} as shown")
    shown = results_show(SPLIT, f"the results of {SPLIT}", lambda shown: True)
    if shown["arms"] != [["without", "10"], ["with", "30"]]:
        problems.append(f"the arms show {shown['arms']}")
    if f"flagctl experiment results {SPLIT}" not in shown["text"]:
        problems.append("the CLI equivalent is not shown")
    if browser.execute_script("return window.__sameDocument") != "experiments":
        problems.append("the page reloaded")
    return "; ".join(problems)


@check("an experiment's results draw each metric's interval against zero and its course over time, with the numbers in words")
def experiment_charts():
    answer = api("GET", f"experiments/{SPLIT}")
    shown = results_show(SPLIT, f"the results of {SPLIT}", lambda shown: shown["trustworthy"] == "true")
    problems = []
    if answer["sample_ratio"]["status"] != "ok" or "Sample ratio as declared" not in shown["text"]:
        problems.append(f"the sample ratio: flagsd says {answer['sample_ratio']['status']}, the view {shown['text'][:200]!r}")
    if shown["banner"]["role"] == "alert":
        problems.append("a trustworthy experiment shows an alert")
    metrics = {metric["name"]: metric for metric in answer["metrics"]}
    charted = {chart["metric"]: chart for chart in shown["intervals"]}
    if set(charted) != set(metrics):
        problems.append(f"interval charts for {sorted(charted)}, flagsd has metrics {sorted(metrics)}")
    for name in [METRIC, "trip_booked", "sessions"]:
        metric, chart = metrics.get(name), charted.get(name)
        if not metric or not chart:
            problems.append(f"no {name}")
            continue
        comparison = metric["comparisons"][0]
        share = metric["kind"] == "conversion"
        expected = f"with: {interval_text(comparison['difference'], share)}, {comparison['verdict']}."
        if chart["tag"] != "svg" or chart["role"] != "img" or chart["bars"] != 1 or chart["dots"] != 1 or chart["zero"] != 1:
            problems.append(f"{name}'s interval chart: {chart}")
        if not chart["label"].startswith(f"{name}: ") or expected not in chart["label"] or "without (the control)" not in chart["label"]:
            problems.append(f"{name}'s chart is labelled {chart['label']!r}, expected it to hold {expected!r}")
        if chart["rows"] != [["with", f"ci-row verdict-{comparison['verdict']}"]]:
            problems.append(f"{name}'s bar is {chart['rows']}")
        if chart["width"] < 200:
            problems.append(f"{name}'s chart is {chart['width']} px wide")
        if interval_text(comparison["difference"], share) not in shown["text"]:
            problems.append(f"{name}'s interval is not in the text beside the chart")
    fare = metrics.get(METRIC)
    if fare and not (fare["comparisons"][0]["difference"]["estimate"] > 0):
        problems.append(f"the fare's difference is {fare['comparisons'][0]['difference']}")
    histories = {chart["metric"]: chart for chart in shown["histories"]}
    history = histories.get(METRIC)
    points = [point for point in (fare or {}).get("history", []) if point["arm"] == "with"]
    if not history or history["tag"] != "svg" or history["role"] != "img" or history["arm"] != "with" or history["zero"] != 1:
        problems.append(f"the fare's course over time: {history}")
    elif not points or history["points"] != len(points) or not history["band"]:
        problems.append(f"the fare's course shows {history['points']} points of {len(points)}, band {history['band']}")
    elif f"{METRIC}: with minus without over time" not in history["label"] or interval_text(points[-1]["difference"], False) not in history["label"]:
        problems.append(f"the fare's course is labelled {history['label']!r}")
    # New units appear on Refresh (and every 30 s), without reloading.
    post_outcomes([({SPLIT: True}, {}, 1, 20.0) for _ in range(6)])
    click_id("experiment-refresh")
    results_show(SPLIT, "the 6 new units after Refresh", lambda shown: shown["arms"] == [["without", "10"], ["with", "36"]])
    if browser.execute_script("return window.__sameDocument") != "experiments":
        problems.append("the page reloaded")
    return "; ".join(problems)


@check("an experiment flag's results draw one interval per treatment variant")
def experiment_variants():
    units = [({}, {VARIANTS: variant}, 1 + index % 2, 14.0 + index % 3 if index % 2 else None)
             for index in range(12) for variant in ["control", "book_now", "lets_go"]]
    post_outcomes(units)
    click_id(f"experiment-link:{VARIANTS}")
    shown = results_show(VARIANTS, f"the results of {VARIANTS}", lambda shown: True)
    problems = []
    if shown["arms"] != [["control", "12"], ["book_now", "12"], ["lets_go", "12"]]:
        problems.append(f"the arms show {shown['arms']}")
    # A bar per treatment variant whose interval flagsd could work out (every one, for the metrics the units reported).
    answer = api("GET", f"experiments/{VARIANTS}")
    bars = {metric["name"]: sum(1 for comparison in metric["comparisons"] if None not in comparison["difference"].values())
            for metric in answer["metrics"]}
    for name in [METRIC, "trip_booked", "sessions"]:
        if bars.get(name) != 2:
            problems.append(f"flagsd has {bars.get(name)} intervals for {name}")
    for chart in shown["intervals"]:
        if chart["bars"] != bars.get(chart["metric"]) or [arm for arm, _ in chart["rows"]] != ["book_now", "lets_go"]:
            problems.append(f"{chart['metric']}'s chart: {chart['bars']} bars, rows {chart['rows']}")
        elif "book_now: " not in chart["label"] or "lets_go: " not in chart["label"]:
            problems.append(f"{chart['metric']}'s chart is labelled {chart['label']!r}")
    fare = [chart for chart in shown["histories"] if chart["metric"] == METRIC]
    if [chart["arm"] for chart in fare] != ["book_now", "lets_go"]:
        problems.append(f"the fare's courses over time: {fare}")
    return "; ".join(problems)


@check("a sample ratio mismatch shows a red banner first and marks the results untrustworthy")
def sample_ratio_mismatch():
    # 60 units, all with the switch, of a switch at 50 %: something enters units in one arm only.
    post_outcomes([({BROKEN: True}, {}, 1, 15.0 if index % 2 else None) for index in range(60)])
    click_id(f"experiment-link:{BROKEN}")
    shown = results_show(BROKEN, f"the results of {BROKEN}", lambda shown: True)
    problems = []
    answer = api("GET", f"experiments/{BROKEN}")
    if answer["trustworthy"] is not False or answer["sample_ratio"]["status"] != "mismatch":
        problems.append(f"flagsd says {answer['sample_ratio']}")
    banner = shown["banner"]
    if shown["trustworthy"] != "false" or not banner or "srm-banner" not in banner["classes"] or banner["role"] != "alert":
        problems.append(f"the banner: {banner}")
    else:
        if not banner["first"]:
            problems.append("the banner does not come before the arms and the metrics")
        if "Untrustworthy" not in banner["text"] or "units split 0 / 60 (without / with)" not in banner["text"]:
            problems.append(f"the banner says {banner['text']!r}")
        red = browser.execute_script("return getComputedStyle(document.querySelector('.badge.killed') || document.body).color")
        if banner["red"] != red and "rgb(164, 14, 38)" not in banner["red"]:
            problems.append(f"the banner's border is {banner['red']}, not the console's red")
    if not shown["greyed"] or shown["opacity"] >= 1:
        problems.append(f"the results are not greyed (opacity {shown['opacity']})")
    if not shown["verdicts"] or set(shown["verdicts"]) != {"untrustworthy"}:
        problems.append(f"the verdicts read {shown['verdicts']}")
    labels = [chart["label"] for chart in shown["intervals"]]
    if not labels or not all("untrustworthy" in label for label in labels):
        problems.append(f"the charts' words do not say untrustworthy: {labels[:2]}")
    if any("verdict-untrustworthy" not in row[1] for chart in shown["intervals"] for row in chart["rows"]):
        problems.append("a bar keeps its verdict's colour")
    return "; ".join(problems)



PAGED = "plugin_switch_prefs_accessibility"


@check("a flag's page shows who holds it, its charts and its history as readable diffs, and reverts a change after a confirmation")
def flag_page():
    flagctl("rollout", PAGED, "40", "--reason", "REL-3 trim accessibility to 40 %", "--yes")
    browser.get(f"{URL}/console/#/rider/flag/{PAGED}")
    wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, "#flag-history li"), f"the history of {PAGED}")
    problems = []
    first = wait_for(lambda d: (item := d.find_element(By.CSS_SELECTOR, "#flag-history > li")) and "REL-3" in item.text and item, "the rollout change first")
    rows = browser.execute_script("""
        return [...document.querySelectorAll('#flag-history > li:first-child table.diff tbody tr')]
          .map((row) => [row.dataset.path, row.querySelector('td.before').innerText, row.querySelector('td.after').innerText]);
    """)
    if ["rollout", "100 %", "40 %"] not in rows:
        problems.append(f"the change shows as {rows}")
    if browser.find_elements(By.CSS_SELECTOR, "#flag-crash-rate svg.rate-chart") == [] or browser.find_elements(By.CSS_SELECTOR, "#flag-sessions svg.sparkline") == []:
        problems.append("the page has no charts")
    holders = by_id("flag-holders").text
    if "nothing but its own settings" not in holders:
        problems.append(f"the page says it is held: {holders!r}")
    # A flag a plan holds says so on its page.
    browser.get(f"{URL}/console/#/rider/flag/{RELEASED}")
    held = wait_for(lambda d: d.find_element(By.ID, "flag-holders").text, f"{RELEASED}'s holders")
    if "release plan paused" not in held:
        problems.append(f"{RELEASED}'s page shows holders {held!r}")
    # Two rollout changes: reverting the older would undo the newer too, so the dialog says so and asks to revert
    # anyway (as flagctl revert asks for --if-version); the newer reverts plainly.
    flagctl("rollout", PAGED, "30", "--reason", "REL-3b trim it to 30 %", "--yes")
    browser.get(f"{URL}/console/#/rider/flag/{PAGED}")
    versions = wait_for(lambda d: (items := d.find_elements(By.CSS_SELECTOR, "#flag-history > li")) and "REL-3b" in items[0].text
                        and [items[0].get_attribute("data-version"), items[1].get_attribute("data-version")], "the page again")
    newer, older = versions
    click_id(f"revert:{older}")
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the revert dialog")
    later = wait_for(lambda d: d.find_element(By.ID, "revert-later").text, "the warning about the later change")
    if f"version {newer}" not in later or "to 30%" not in later or by_id("change-confirm").text != "Revert anyway":
        problems.append(f"reverting the older change warns {later!r} and offers {by_id('change-confirm').text!r}")
    by_id("change-cancel").click()
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "the dialog to close")
    click_id(f"revert:{newer}")
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is not None, "the revert dialog")
    if f"Revert version {newer}" not in by_id("change-title").text or browser.find_elements(By.ID, "revert-later") or by_id("change-confirm").text != "Revert":
        problems.append(f"reverting the newest change says {by_id('change-dialog').text[:300]!r}")
    by_id("change-confirm").click()
    if "reason" not in dialog_error("the missing reason"):
        problems.append("the revert was sent without a reason")
    by_id("change-reason").send_keys("REL-3b undone: 40 % it is")
    by_id("change-confirm").click()
    wait_for(lambda d: d.find_element(By.ID, "change-dialog").get_attribute("open") is None, "the dialog to close")
    wait_for(lambda d: "REL-3b undone" in d.find_element(By.CSS_SELECTOR, "#flag-history > li").text, "the revert at the top of the history")
    flag = json.loads(flagctl("get", PAGED, "-o", "json"))["flag"]
    if flag.get("rollout") not in (40, 4000, "40%", "40 %"):
        problems.append(f"flagctl get shows rollout {flag.get('rollout')!r} after the revert")
    definition = wait_for(lambda d: "40 %" in (text := d.find_element(By.CSS_SELECTOR, "#flag-definition").text) and text, "the rollout back at 40 %")
    if "40 %" not in definition:
        problems.append("the page's definition does not show the rollout back at 40 %")
    return "; ".join(problems)


def listed_flags():
    """The keys of the flags the Flags view lists, in order."""
    return browser.execute_script("return [...document.querySelectorAll('tr[data-flag]')].map((row) => row.dataset.flag)")


@check("a namespace of many flags lists 200 at first and more on request, the filter finds any, and the guard table and a large change's diffs are as short")
def many_flags():
    problems = []
    browser.get(f"{URL}/console/#/{WIDE_NAMESPACE}/flags")
    wait_for(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr[data-flag]")) == 200 and d.find_elements(By.ID, "show-more-flags"),
             f"the first 200 flags of {WIDE_NAMESPACE}")
    said = steady(lambda: by_id("flags-more").text)
    if f"Showing 200 of {WIDE_FLAGS} flags" not in said:
        problems.append(f"the list says {said!r}")
    click_id("show-more-flags")
    wait_for(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr[data-flag]")) == min(400, WIDE_FLAGS), "the next flags")
    if WIDE_FLAGS <= 400 and browser.find_elements(By.ID, "show-more-flags"):
        problems.append("the list offers more once every flag is listed")
    keys = listed_flags()
    if keys != sorted(keys) or keys[0] != "plugin_switch_wide_000":
        problems.append(f"the flags are listed as {keys[:3]}…")
    focused = browser.execute_script("const row = document.activeElement.closest('tr[data-flag]'); return row && row.dataset.flag")
    if focused != keys[200]:
        problems.append(f"after Show more the focus is on {focused}, not the first flag added ({keys[200]})")
    # The last flag, past what is listed, is found by the filter.
    last = f"plugin_switch_wide_{WIDE_FLAGS - 1:03d}"
    by_id("flag-filter").send_keys(last)
    wait_for(lambda d: listed_flags() == [last], f"the filter to find {last}")
    if browser.find_elements(By.ID, "flags-more"):
        problems.append("a list the filter narrowed to one flag still offers more")
    open_view("guard")
    switches = "#guard-status-table tbody tr"
    wait_for(lambda d: len(d.find_elements(By.CSS_SELECTOR, switches)) == 200 and d.find_elements(By.ID, "show-more-switches"),
             "the guard table's first 200 switches")
    said = steady(lambda: by_id("guard-status-more").text)
    if f"Showing the 200 most urgent of {WIDE_FLAGS} plugin switches" not in said or f"Show {min(200, WIDE_FLAGS - 200)} more" not in said:
        problems.append(f"the guard table says {said!r}")
    while browser.find_elements(By.ID, "show-more-switches"):
        click_id("show-more-switches")
    wait_for(lambda d: len(d.find_elements(By.CSS_SELECTOR, switches)) == WIDE_FLAGS, "every switch in the guard table")
    if browser.find_elements(By.ID, "guard-status-more"):
        problems.append("the guard table offers more once every switch is listed")
    # A change made elsewhere loads the statistics again: the table keeps every switch listed and the focus its link.
    last_link = f"guard-table:{last}"
    browser.execute_script("document.getElementById(arguments[0]).focus(); document.getElementById('guard-status-table').dataset.before = 'yes'", last_link)
    changed = api("POST", "flags/plugin_switch_wide_001/rollout", {"rollout": 4321}, namespace=WIDE_NAMESPACE)
    if not changed.get("changed"):
        problems.append(f"the change in {WIDE_NAMESPACE} changed nothing: {changed}")
    wait_for(lambda d: d.execute_script("const table = document.getElementById('guard-status-table'); return table && !table.dataset.before"),
             "the guard's statistics loaded again after a change")
    listed = steady(lambda: len(browser.find_elements(By.CSS_SELECTOR, switches)))
    if listed != WIDE_FLAGS:
        problems.append(f"after a change the guard table lists {listed} switches, not the {WIDE_FLAGS} shown before")
    focused = browser.execute_script("return document.activeElement.id")
    if focused != last_link:
        problems.append(f"after a change the focus is on {focused!r}, not {last_link!r}")
    # The namespace was created in one change of more objects than an entry draws at first.
    open_view("audit")
    entry = "#audit-timeline > li:last-child"
    total = int(wait_for(lambda d: d.execute_script(
        f"const s = document.querySelector('{entry} details > summary'); return s && s.textContent.match(/\\((\\d+)\\)/)[1]"),
        "the creation's entry"))
    drawn = lambda: len(browser.find_elements(By.CSS_SELECTOR, f"{entry} .change-diff"))
    if total <= 200 or drawn() != 200:
        problems.append(f"the creation's entry of {total} objects draws {drawn()}")
    browser.execute_script(f"document.querySelector('{entry} details').open = true")
    button = f"{entry} details > p.meta button"
    label = wait_for(lambda d: d.find_element(By.CSS_SELECTOR, button).text, "the entry's button for the rest")
    if label != f"Show the other {total - 200:,}":
        problems.append(f"the entry's button says {label!r}")
    click(button)
    wait_for(lambda _: drawn() == total, f"all {total} objects of the creation")
    focused = browser.execute_script("return document.activeElement.closest('.change-diff') && document.activeElement.closest('.change-diff').dataset.key")
    if not focused:
        problems.append("after showing the other objects the focus is not on the first of them")
    # A change made elsewhere adds its entry at the top: the creation's entry keeps every object drawn, and the focus.
    entries = len(browser.find_elements(By.CSS_SELECTOR, "#audit-timeline > li"))
    changed = api("POST", "flags/plugin_switch_wide_002/rollout", {"rollout": 1234}, namespace=WIDE_NAMESPACE)
    if not changed.get("changed"):
        problems.append(f"the second change in {WIDE_NAMESPACE} changed nothing: {changed}")
    wait_for(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#audit-timeline > li")) > entries, "the new change's entry")
    still = steady(lambda: (drawn(), browser.execute_script(
        "return document.activeElement.closest('.change-diff') && document.activeElement.closest('.change-diff').dataset.key")))
    if still != (total, focused):
        problems.append(f"after a change the creation's entry draws {still[0]} of {total} objects, the focus on {still[1]!r} (was {focused!r})")
    browser.get(f"{URL}/console/#/rider/flags")
    wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-flag="plugin_switch_feed_promos"]'), "rider's flags again")
    return "; ".join(problems)


@check("every control has an accessible name")
def accessible_names():
    unnamed = browser.execute_script("""
        const named = (element) => (element.labels && element.labels.length) || element.getAttribute('aria-label')
          || element.getAttribute('aria-labelledby') || element.textContent.trim();
        return [...document.querySelectorAll('button, input, select, textarea, a[href]')]
          .filter((element) => element.offsetParent !== null && !named(element))
          .map((element) => element.outerHTML.slice(0, 120));
    """)
    return f"controls without a name: {unnamed}" if unnamed else ""


@check("on a phone-sized screen nothing scrolls sideways")
def phone_layout():
    browser.set_window_size(390, 844)
    try:
        problems = []
        for view in ["flags", "kill-switches", "audit", "guard", "releases", "experiments", f"flag/{ROLLED}"]:
            if view.startswith("flag/"):
                browser.get(f"{URL}/console/#/rider/{view}")
                wait_for(lambda d: d.find_elements(By.ID, "flag-history"), f"the page of {ROLLED}")
            else:
                open_view(view)
            widths = browser.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            if widths[0] > widths[1] + 1:
                # The innermost elements past the right edge: what to fix.
                wide = browser.execute_script("""
                    const edge = document.documentElement.clientWidth + 1;
                    const past = [...document.querySelectorAll('#view *')].filter((element) => element.getBoundingClientRect().right > edge);
                    return past.filter((element) => !past.some((other) => other !== element && element.contains(other)))
                      .slice(0, 5).map((element) => `${element.tagName.toLowerCase()}.${element.getAttribute('class') || ''}#${element.id}: ${(element.textContent || '').slice(0, 40)}`);
                """)
                problems.append(f"{view}: {widths[0]} px wide on a {widths[1]} px screen ({wide})")
        return "; ".join(problems)
    finally:
        browser.set_window_size(1280, 900)


@check("no script error and no Content-Security-Policy violation")
def clean_console_log():
    bad = []
    for entry in browser.get_log("browser"):
        message = entry.get("message", "")
        # The refused client token's 403 and the conflict's 409 are the scenario's; any other failure is not.
        if "Failed to load resource" in message and ("status of 403" in message or "status of 409" in message):
            continue
        if entry.get("level") == "SEVERE" or "Content Security Policy" in message or "Trusted Type" in message:
            bad.append(message[:300])
    return f"browser log: {bad}" if bad else ""


@check("signing out forgets the token")
def sign_out():
    by_id("sign-out").click()
    wait_for(lambda d: d.find_element(By.ID, "sign-in").is_displayed(), "the sign-in form")
    if browser.execute_script("return sessionStorage.length") != 0:
        return "sessionStorage still holds something"
    browser.refresh()
    wait_for(lambda d: d.find_element(By.ID, "sign-in").is_displayed(), "the sign-in form after a reload")
    return ""


def main():
    global browser
    started = time.monotonic()
    try:
        browser = start_browser()
    except Exception as error:  # No browser: the environment, not the console.
        print(f"error: could not start {os.environ['CHROMIUM']} through {os.environ['CHROMEDRIVER']}: {error}", file=sys.stderr)
        return 2
    try:
        run_checks()
    finally:
        browser.quit()
    print(f"{len(checks) - len(failures)} of {len(checks)} checks passed in {time.monotonic() - started:.1f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
