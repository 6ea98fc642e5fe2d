"""Photographs the web console for docs/console.md (run through scripts/console-screenshots, which builds the binaries
and the Selenium environment): a real flagsd on a free loopback port, seeded from Flags/, two release plans and a
fleet of riders (scripts/rider-fleet), then every view on a desktop and a phone screen."""

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRASHING = "plugin_switch_prefs_ride_pass"
HEALTHY = "plugin_switch_map_scooters"
VIEWS = ["flags", f"flag/{CRASHING}", "guard", "releases", "audit", "kill-switches", "experiments"]
SCREENS = {"desktop": (1280, 1600), "phone": (390, 2000)}


def say(text):
    print(f"==> {text}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def request(url, token, method="GET", body=None):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers, method=method), timeout=30) as response:
        return json.loads(response.read())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--flagsd", required=True)
    parser.add_argument("--flagctl", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--minutes", type=float, default=3)
    options = parser.parse_args()
    os.makedirs(options.out, exist_ok=True)
    admin = "screenshots-admin-" + secrets.token_hex(12)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    processes = []
    with tempfile.TemporaryDirectory() as folder:
        try:
            say(f"starting flagsd on {url}")
            environment = dict(os.environ, SWITCHYARD_ADMIN_TOKEN=admin)
            flagsd = subprocess.Popen(
                [options.flagsd, "--port", str(port), "--database", os.path.join(folder, "flags.sqlite"), "--flags", os.path.join(ROOT, "Flags"),
                 "--events-max-skew", "0s", "--release-interval", "5", "--trusted-proxies", "127.0.0.1", "--log-format", "json"],
                env=environment, stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, "flagsd.log"), "w"))
            processes.append(flagsd)
            deadline = time.time() + 60
            while True:
                try:
                    urllib.request.urlopen(f"{url}/readyz", timeout=2)
                    break
                except Exception:
                    if time.time() > deadline or flagsd.poll() is not None:
                        raise SystemExit(f"flagsd did not become ready; see {folder}/flagsd.log")
                    time.sleep(0.3)
            api = f"{url}/v1/namespaces/rider"
            client = request(f"{url}/v1/tokens", admin, "POST", {"name": "rider-app", "role": "client", "namespaces": ["rider"]})["token"]
            editor = request(f"{url}/v1/tokens", admin, "POST", {"name": "ada", "role": "editor"})["token"]
            say("starting two release plans")
            request(f"{api}/flags/{CRASHING}/release/start", editor, "POST", {
                "plan": {"stages": [{"cities": ["lagos"], "rollout": 5000, "soak": "1m", "min_sessions": 200},
                                    {"rollout": 5000, "soak": "2m"}, {"rollout": 10000}]},
                "reason": "REL-7 ride pass, Lagos first"})
            request(f"{api}/flags/{HEALTHY}/release/start", editor, "POST", {
                "plan": {"stages": [{"cities": ["paris"], "rollout": 5000, "soak": "1m", "min_sessions": 100}, {"rollout": 10000}]},
                "reason": "REL-8 scooters in Paris"})
            say(f"running the fleet for {options.minutes} minutes")
            fleet = os.path.join(ROOT, "scripts", "rider-fleet")
            common = ["--server", url, "--token", client, "--minutes", str(options.minutes)]
            processes.append(subprocess.Popen([fleet, *common, "--switch", CRASHING, "--cities", "lagos,nairobi", "--per-minute", "1200",
                                               "--excess", "3"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            processes.append(subprocess.Popen([fleet, *common, "--switch", HEALTHY, "--cities", "paris", "--per-minute", "600", "--seed", "7",
                                               "--book-lift", "5"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(20)
            flagctl_environment = dict(os.environ, FLAGCTL_SERVER=url, FLAGCTL_TOKEN=editor, FLAGCTL_NAMESPACE="rider", NO_COLOR="1",
                                       HOME=folder, XDG_CONFIG_HOME=folder)
            subprocess.run([options.flagctl, "rollout", "plugin_switch_feed_safety_tips", "40", "--reason", "INC-12 fewer tips while we check the copy",
                            "--yes"], env=flagctl_environment, check=True, capture_output=True)
            for fleet_process in processes[1:]:
                fleet_process.wait(timeout=options.minutes * 60 + 120)
            time.sleep(6)  # one more look by the release runner
            shoot(url, editor, options.out)
        finally:
            for process in reversed(processes):
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
                    try:
                        process.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        process.kill()


def shoot(url, token, out):
    browser_options = webdriver.ChromeOptions()
    browser_options.binary_location = os.environ["CHROMIUM"]
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--hide-scrollbars",
                     "--force-device-scale-factor=1", "--window-size=1280,900"]:
        browser_options.add_argument(argument)
    browser = webdriver.Chrome(service=Service(executable_path=os.environ["CHROMEDRIVER"]), options=browser_options)
    try:
        browser.get(f"{url}/console/")
        browser.find_element(By.ID, "token-input").send_keys(token)
        browser.find_element(By.ID, "sign-in-button").click()
        WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "flags-table"))
        for screen, (width, height) in SCREENS.items():
            browser.set_window_size(width, 900)
            for view in VIEWS:
                browser.get(f"{url}/console/#/rider/{view}")
                WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "view-title"))
                time.sleep(3)  # the charts and statistics load after the view
                full = browser.execute_script("return document.documentElement.scrollHeight")
                browser.set_window_size(width, min(full, height))
                time.sleep(0.5)
                name = view.split("/")[0]
                path = os.path.join(out, f"{name}-{screen}.png")
                browser.save_screenshot(path)
                say(f"{os.path.relpath(path, ROOT)} ({width}×{min(full, height)})")
    finally:
        browser.quit()


if __name__ == "__main__":
    main()
