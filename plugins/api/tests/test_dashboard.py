"""The dashboard in a real browser: Debian's headless Chromium driven through its chromedriver by
Selenium (both from the system: nothing is downloaded). Open the dashboard, start a run from
the form, watch it finish live, open its rows; submit a spec, see its plan drawn, approve it
and watch its tasks merge. Screenshots are kept as the tests' artifacts (their paths printed;
API_DASHBOARD_SCREENSHOT=PATH copies the run's there too, e.g. for the README)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHROMIUM.is_file() and DRIVER.is_file()),
        reason="needs Debian's chromium and chromium-driver (/usr/bin/chromium, chromedriver)",
    ),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never download
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,1600"):  # fmt: skip
        options.add_argument(arg)
    # chromium leaves its singleton folder (org.chromium.Chromium.*) in TMPDIR: pytest's here
    env = {**os.environ, "TMPDIR": str(tmp_path_factory.mktemp("chromium-tmp"))}
    service = Service(executable_path=str(DRIVER), env=env)
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.mark.timeout(600)
def test_start_a_run_watch_it_and_read_its_rows(api, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

    served = api()
    wait = WebDriverWait(browser, 180)
    browser.get(served.url + "/")
    assert "no jobs yet" in browser.find_element(By.ID, "jobs").text
    Select(browser.find_element(By.ID, "pipeline")).select_by_value("samplers")
    assert "options:" in browser.find_element(By.ID, "options-fields").text  # from the schema
    rows = browser.find_element(By.ID, "num_records")
    rows.clear()
    rows.send_keys("6")
    options = browser.find_element(By.ID, "options")
    options.clear()
    options.send_keys('{"categories": {"language": ["python", "rust", "go"]}}')
    browser.find_element(By.ID, "start-run").click()

    wait.until(ec.url_contains("/jobs/"))
    job_id = browser.current_url.rsplit("/", 1)[1]
    wait.until(ec.text_to_be_present_in_element((By.ID, "ws-state"), "ended"))
    assert browser.find_element(By.ID, "ws-state").text == "ended: ok"
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "ok"))
    assert browser.find_element(By.ID, "n-kept").text == "6"
    assert int(browser.find_element(By.ID, "event-count").text) >= 5
    log = browser.find_element(By.ID, "events").text
    assert "run_started" in log and "run_finished" in log
    assert browser.find_element(By.ID, "report").is_displayed()

    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#rows-kept tbody tr")))
    table = browser.find_element(By.ID, "rows-kept")
    assert len(table.find_elements(By.CSS_SELECTOR, "tbody tr")) == 6
    assert {"python", "rust", "go"} >= {
        td.text for td in table.find_elements(By.CSS_SELECTOR, "tbody td:first-child")
    }
    api_rows = served.client.get(f"/api/jobs/{job_id}/rows").json()
    assert api_rows["total"] == 6

    shot = tmp_path / "api-dashboard.png"
    browser.save_screenshot(str(shot))
    print(f"dashboard screenshot: {shot}")
    if os.environ.get("API_DASHBOARD_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["API_DASHBOARD_SCREENSHOT"])

    browser.get(served.url + "/")  # the list shows the job, its status and kept / requested
    listed = browser.find_element(By.CSS_SELECTOR, f'#jobs tr[data-id="{job_id}"]').text
    assert "ok" in listed and "6 / 6" in listed


@pytest.mark.timeout(900)  # planning, three workers and their merges: minutes on busy cores
def test_submit_a_spec_and_approve_its_plan(api, browser, orchestration_spec, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    served = api()
    wait = WebDriverWait(browser, 600)
    browser.get(served.url + "/")
    browser.find_element(By.ID, "orchestration-spec").send_keys(orchestration_spec)
    browser.find_element(By.CSS_SELECTOR, "#new-orchestration button").click()
    wait.until(ec.url_contains("/jobs/"))
    job_id = browser.current_url.rsplit("/", 1)[1]
    approve = (By.ID, "approve")
    # the page reloads when the plan's tasks come, to draw the DAG the server renders: the
    # button can show on the page before that (a loaded box once looked there, and saw no DAG)
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#dag svg g.node"))
    wait.until(ec.visibility_of_element_located(approve))  # the plan waits for approval
    nodes = browser.find_elements(By.CSS_SELECTOR, "#dag svg g.node")
    assert sorted(n.get_attribute("data-task") for n in nodes) == ["cli", "core", "docs"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#dag svg path.edge")) == 2
    browser.find_element(*approve).click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "ok"))

    def classes(b: Any) -> set[str]:
        return {n.get_attribute("class") for n in b.find_elements(By.CSS_SELECTOR, "#dag g.node")}

    wait.until(lambda b: classes(b) == {"node s-merged"})  # the DAG recoloured live
    merges = browser.find_element(By.ID, "merges").text.splitlines()
    assert sorted(merges) == ["cli: merged", "core: merged", "docs: merged"]
    assert served.client.get(f"/api/orchestrations/{job_id}").json()["plan"]["approved"]
    shot = tmp_path / "api-orchestration.png"
    browser.save_screenshot(str(shot))
    print(f"orchestration screenshot: {shot}")
